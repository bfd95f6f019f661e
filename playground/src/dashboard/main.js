// The live dashboard of one tenant, served at /dashboard. Plain ES modules and
// DOM; the only library is graphql-ws for the subscription.
//
// Flow: sign in (token typed in, from the URL fragment, or from this tab's
// sessionStorage) -> read the feed's end and the lists -> follow the feed over
// WebSocket; each event refetches what it changed. A dropped socket shows the
// Offline banner and is reconnected with backoff, resuming after the last
// event seen, and the shown lists are read again once.
import './dashboard.css';
import { ApiError, gql } from './api.js';
import { $ } from './dom.js';
import { sayReconnected, setUpForms, wireForm } from './forms.js';
import { follow } from './live.js';
import { ME } from './queries.js';
import { renderAll } from './render.js';
import * as session from './session.js';
import { createState, mergeNode, resetState } from './store.js';
import { createSync } from './sync.js';

const banner = $('#connection');
let live = null;

function setBanner(kind, text) {
  banner.className = `banner ${kind ? `banner-${kind}` : ''}`;
  banner.textContent = text;
}

function showSignIn(error) {
  $('#dashboard').hidden = true;
  $('#who').hidden = true;
  $('#sign-out').hidden = true;
  $('#sign-in').hidden = false;
  const form = $('#sign-in-form');
  if (error) {
    const box = form.querySelector('.form-error');
    box.textContent = error.toString();
    box.hidden = false;
  }
  form.elements.token.focus();
}

// Signs in and starts the dashboard; throws (an ApiError) if the token or
// tenant is refused, leaving the sign-in form up.
async function start({ token, tenant }) {
  const { me } = await gql(token, ME);
  const tenantId = tenant || me.tenantId;
  if (!tenantId) throw new ApiError('INVALID_INPUT', 'this token has no tenant of its own: enter the tenant to show');

  const state = createState(tenantId);
  let refreshForms = () => {};
  let queued = false;
  // Coalesces redraws: many merges in one turn draw once.
  const changed = () => {
    if (queued) return;
    queued = true;
    setTimeout(() => {
      queued = false;
      renderAll(state);
      refreshForms();
    }, 0);
  };
  const sync = createSync({ token, state, changed });

  // The feed's end first, then the lists: see sync.js for why.
  const cursor = await sync.readFeedHead();
  await sync.loadAll();
  // Only now is the tenant known to be readable with this token.
  session.save({ token, tenant: tenantId });

  $('#sign-in').hidden = true;
  $('#tenant-name').textContent = tenantId;
  $('#who').hidden = false;
  $('#sign-out').hidden = false;
  $('#dashboard').hidden = false;
  refreshForms = setUpForms({ token, state, merge: (view) => mergeNode(state, view), changed });
  setUpLoadMore(sync);
  changed();

  live = follow({
    token,
    tenantId,
    cursor,
    onEvent(event) {
      if (!state.events.add(event)) return; // replayed after a reconnect: already handled
      sync.onEvent(event);
      changed();
    },
    onStatus(status, info) {
      if (status === 'offline') {
        setBanner('offline', `Offline: lost the live connection to the server. Reconnecting in ${Math.round(info.retryInMs / 1000)} s…`);
      } else if (status === 'online') {
        setBanner(null, '');
        // Cheap and safe: anything missed is replayed anyway.
        if (info.reconnected) sync.refetchVisible().catch(() => {});
        if (info.reconnected) sayReconnected();
      } else {
        setBanner('error', `Live updates stopped: ${info.reason}. Sign out and sign in again.`);
      }
    },
    // The server's feed is another one (its database was replaced): start over.
    async onCursorExpired() {
      resetState(state);
      const fresh = await sync.readFeedHead();
      await sync.loadAll();
      return fresh;
    },
  });
}

function setUpLoadMore(sync) {
  for (const footer of document.querySelectorAll('.list-footer')) {
    const button = footer.querySelector('.more');
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        await sync.loadMore(footer.dataset.list);
      } catch (err) {
        footer.querySelector('.count').textContent = String(err);
      } finally {
        button.disabled = false;
      }
    });
  }
}

$('#sign-out').addEventListener('click', () => {
  live?.stop();
  session.clear();
  // A fresh page: nothing of the tenant stays in memory.
  location.replace(location.pathname + location.search);
});

wireForm($('#sign-in-form'), async ({ token, tenant }) => {
  await start({ token: token.trim(), tenant: tenant.trim() });
  $('#sign-in-form').reset();
});

// Read (and remove) the fragment before anything else can be awaited.
const credentials = session.takeFromFragment() ?? session.load();
if (credentials) {
  start(credentials).catch((err) => {
    if (err.code === 'UNAUTHENTICATED') session.clear();
    showSignIn(err);
  });
} else {
  showSignIn();
}
