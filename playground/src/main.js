// The GraphiQL page that vps-graph serves at `/`. Everything is bundled by vite
// and embedded in the binary, so the page works with no network besides the
// service itself: queries and mutations are POSTed to /graphql on the same
// origin, subscriptions use graphql-transport-ws on ws(s)://<same host>/graphql.
import 'graphiql/setup-workers/vite'; // Monaco's editor workers, bundled (no CDN)
import 'graphiql/style.css';
import React from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { getOperationAST, parse } from 'graphql';
import { createClient } from 'graphql-ws';

const httpUrl = new URL('/graphql', location.href).href;
const wsUrl = httpUrl.replace(/^http/, 'ws'); // http -> ws, https -> wss

// HTTP only: the toolkit fetcher adds the headers typed in the Headers tab to
// every POST. Subscriptions never reach it (see fetcher below).
const http = createGraphiQLFetcher({ url: httpUrl });

// A WebSocket is authenticated once, from the connection_init payload, so the
// headers must be fixed when the socket opens: one client per headers value.
// Clients are lazy, so one that has no running subscription holds no socket.
const wsClients = new Map();
function wsClient(headers) {
  const key = JSON.stringify(headers);
  if (!wsClients.has(key)) {
    wsClients.set(key, createClient({
      url: wsUrl,
      connectionParams: headers, // e.g. {"Authorization": "Bearer vpsg_..."}
      // A rejected token would otherwise be retried for half a minute before
      // the error shows; in a playground the user simply runs it again.
      retryAttempts: 0,
    }));
  }
  return wsClients.get(key);
}

// The last results of a subscription the result pane shows, newest first.
const KEEP_RESULTS = 50;

function subscribe(params, headers) {
  const results = wsClient(headers).iterate(params);
  const received = [];
  let count = 0;
  // GraphiQL shows each value it is handed in place of the last: hand it the
  // list so far, so that every event stays in sight.
  const listed = (step) => {
    if (step.done) return step;
    count += 1;
    received.unshift(step.value);
    if (received.length > KEEP_RESULTS) received.length = KEEP_RESULTS;
    return { done: false, value: { received: count, newestFirst: [...received] } };
  };
  return {
    [Symbol.asyncIterator]() { return this; },
    // A closed socket surfaces as a CloseEvent, which GraphiQL would print as
    // `{"isTrusted":true}`. Throw a plain object: GraphiQL shows its message
    // as the error (an Error would come with a stack trace).
    next: () => results.next().then(listed).catch((err) => {
      throw err instanceof CloseEvent
        ? { message: `WebSocket closed: ${err.code} ${err.reason}`.trim() }
        : err;
    }),
    // Not an async generator on purpose: its return() would wait for the next
    // event, while this one stops the subscription as soon as Stop is clicked.
    return: () => results.return(),
  };
}

function isSubscription(params, documentAST) {
  try {
    const doc = documentAST ?? parse(params.query);
    return getOperationAST(doc, params.operationName || undefined)?.operation === 'subscription';
  } catch {
    return false; // not parseable: let the server report the syntax error
  }
}

function fetcher(params, opts = {}) {
  return isSubscription(params, opts.documentAST)
    ? subscribe(params, opts.headers ?? {})
    : http(params, opts);
}

// Kept narrow: the editor is about half the window wide.
const defaultQuery = `# vps-graph
#
# Requests need the token that vps-graph
# printed at start-up. Paste it into the
# Headers tab below as
#
#   {"Authorization": "Bearer <token>"}
#
# then run this query (Ctrl-Enter).

query Me {
  me {
    tokenId
    tenantId
    grants { permission scope }
  }
}
`;

// GraphiQL fetches the schema (for docs and autocompletion) once at start-up,
// before its Headers editor exists, so without the token. It fetches it again
// whenever `fetcher` changes identity: hand it a new one after headers edits.
function App() {
  const [currentFetcher, setFetcher] = React.useState(() => fetcher);
  const timer = React.useRef();
  const onEditHeaders = React.useCallback(() => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setFetcher(() => (...args) => fetcher(...args)), 700);
  }, []);
  return React.createElement(
    GraphiQL,
    {
      fetcher: currentFetcher,
      defaultQuery,
      defaultEditorToolsVisibility: 'headers',
      onEditHeaders,
      // The editors, the headers with the token too, are kept for this tab's
      // session: a reload keeps them, closing the tab forgets them, and none of
      // it is written to localStorage.
      storage: sessionStorage,
      shouldPersistHeaders: true,
    },
    React.createElement(GraphiQL.Logo, null, 'vps-graph'),
  );
}

// A new tab of the same browser asks the open ones for their headers (the token
// typed once): same origin only, never stored beyond the tabs' sessions. The
// page does not wait for an answer; one that comes while this tab has no
// headers of its own is stored and GraphiQL starts again from it.
const HEADERS_KEY = 'graphiql:headers';

function shareHeaders(received) {
  if (typeof BroadcastChannel === 'undefined') return;
  const channel = new BroadcastChannel('vps-graph-graphiql');
  channel.onmessage = ({ data }) => {
    const held = sessionStorage.getItem(HEADERS_KEY);
    if (data === 'headers?' && held?.includes('Authorization')) channel.postMessage({ headers: held });
    else if (data?.headers && !held?.trim()) {
      sessionStorage.setItem(HEADERS_KEY, data.headers);
      received();
    }
  };
  if (!sessionStorage.getItem(HEADERS_KEY)?.trim()) channel.postMessage('headers?');
}

const root = createRoot(document.getElementById('root'));
let generation = 0;
const render = () => root.render(React.createElement(App, { key: generation }));
render();
shareHeaders(() => {
  generation += 1;
  render();
});
