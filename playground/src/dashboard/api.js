// GraphQL over HTTP for the dashboard, and the error shape every form shows.
//
// The API is always on the page's own origin: when the binary serves the page
// that is the binary, and in development vite proxies /graphql to it.

export const HTTP_URL = new URL('/graphql', location.href).href;
export const WS_URL = HTTP_URL.replace(/^http/, 'ws'); // http -> ws, https -> wss

// A refusal or failure, shown as `CODE: message` next to the form that caused it.
export class ApiError extends Error {
  constructor(code, message, details = null) {
    super(message);
    this.code = code;
    this.details = details;
  }

  // Whether the server may not have seen (or finished) the request, so the same
  // submit may be sent again with the same idempotency key. A coded refusal
  // such as QUOTA_EXCEEDED is a definitive answer and is not retried as-is.
  get uncertain() {
    return ['NETWORK', 'INTERNAL', 'TIMEOUT', 'HTTP'].includes(this.code);
  }

  toString() {
    return `${this.code}: ${this.message}`;
  }
}

function fromGraphQLError(error) {
  return new ApiError(error?.extensions?.code ?? 'ERROR', error?.message ?? 'unknown error', error?.extensions?.details);
}

// Sends one operation; resolves to `data`, or throws an ApiError for the first
// GraphQL error (a mutation's field is all-or-nothing, so one error is the answer).
export async function gql(token, query, variables = {}) {
  let response;
  try {
    response = await fetch(HTTP_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
      // Never cached: every answer is the current state.
      cache: 'no-store',
    });
  } catch {
    throw new ApiError('NETWORK', 'could not reach the server; try again');
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError('HTTP', `the server answered ${response.status} without a GraphQL body`);
  }
  if (body.errors?.length) throw fromGraphQLError(body.errors[0]);
  if (!body.data) throw new ApiError('HTTP', `the server answered ${response.status} without data`);
  return body.data;
}

// Sends one mutation as a dry run (`dryRun: true` in its input): resolves to the
// plan the server answered for its field `result`, or throws its refusal as `gql`.
export async function dryRun(token, query, input) {
  let response;
  try {
    response = await fetch(HTTP_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables: { input: { ...input, dryRun: true } } }),
      cache: 'no-store',
    });
  } catch {
    throw new ApiError('NETWORK', 'could not reach the server; try again');
  }
  const body = await response.json().catch(() => null);
  if (!body) throw new ApiError('HTTP', `the server answered ${response.status} without a GraphQL body`);
  if (body.errors?.length) throw fromGraphQLError(body.errors[0]);
  return body.extensions?.plan?.result ?? null;
}

// Errors of a GraphQL result delivered over the WebSocket (`next` with `errors`).
export function firstError(errors) {
  return fromGraphQLError(errors?.[0]);
}

// A fresh idempotency key. crypto.randomUUID exists only in secure contexts
// (https or localhost); getRandomValues exists everywhere.
export function newIdempotencyKey() {
  if (crypto.randomUUID) return `dash-${crypto.randomUUID()}`;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `dash-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}
