// The signed-in token and tenant, kept in sessionStorage: they last as long as
// the tab, are not shared with other tabs, and are never put in a URL that is
// sent anywhere. A link may hand them over in the fragment
// (`/dashboard#token=…&tenant=…`), which browsers never send to the server.

const TOKEN_KEY = 'vps-graph.dashboard.token';
const TENANT_KEY = 'vps-graph.dashboard.tenant';

// Takes the token and tenant out of the fragment, if there, and removes the
// fragment from the address bar (and from this history entry) at once, so it
// is not left in view, in the history or in a bookmark.
export function takeFromFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ''));
  if (!params.has('token')) return null;
  history.replaceState(history.state, '', location.pathname + location.search);
  return { token: params.get('token').trim(), tenant: (params.get('tenant') ?? '').trim() };
}

export function load() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { token, tenant: sessionStorage.getItem(TENANT_KEY) ?? '' } : null;
}

export function save({ token, tenant }) {
  sessionStorage.setItem(TOKEN_KEY, token);
  sessionStorage.setItem(TENANT_KEY, tenant);
}

export function clear() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(TENANT_KEY);
}
