// The tenant's event feed over WebSocket (graphql-transport-ws), kept alive
// across drops: one `events` subscription, resumed after the last cursor seen.
//
// graphql-ws can retry by itself, but it would resubscribe with the variables
// of the first subscribe, i.e. replay from the first cursor. So each connection
// is made here with retries off, and a dropped one is replaced by a new client
// that subscribes `after` the cursor of the last event received. The server
// replays what came after that cursor and then goes live with no gap; the
// caller drops anything it has already seen (by event id).
import { createClient } from 'graphql-ws';
import { WS_URL, firstError } from './api.js';
import { EVENTS_SUBSCRIPTION } from './queries.js';

// First retry after ~1 s, then 2 s, 4 s, capped at 5 s: a restart is back soon,
// and a long outage is not hammered.
const BACKOFF_MS = [1000, 2000, 4000, 5000];
// A ping every 10 s lets a dead proxy connection show as a drop.
const KEEP_ALIVE_MS = 10_000;
// Close codes after which retrying cannot help: the token is refused/revoked.
const DENIED = new Set([4401, 4403]);

// Starts following the feed after `cursor`. Callbacks:
//   onEvent(event)          every event, in feed order
//   onStatus(status, info)  'online' (info.reconnected: a drop preceded it),
//                           'offline' (info.retryInMs), or 'denied' (info.reason)
//   onCursorExpired()       the cursor belongs to another database (the server
//                           was reset): resolves to a fresh cursor to go on from
// Returns { stop() }.
export function follow({ token, tenantId, cursor, onEvent, onStatus, onCursorExpired }) {
  let stopped = false;
  let dropped = false; // a connection was lost since the last 'online'
  let failures = 0; // consecutive connections that never came up
  let client = null;
  let wake = null; // ends the current backoff wait early (on stop)

  // One connection: resolves with why it ended.
  function connectOnce() {
    return new Promise((resolve) => {
      client = createClient({
        url: WS_URL,
        // websocket.rs reads the bearer token from connection_init.
        connectionParams: { Authorization: `Bearer ${token}` },
        lazy: true,
        retryAttempts: 0,
        keepAlive: KEEP_ALIVE_MS,
        on: {
          connected: () => {
            failures = 0;
            onStatus('online', { reconnected: dropped });
            dropped = false;
          },
          // Any close ends this connection, even a clean 1000 after which
          // graphql-ws would retry on its own with the old `after`.
          closed: (event) => resolve({ closed: event }),
        },
      });
      client.subscribe(
        { query: EVENTS_SUBSCRIPTION, variables: { tenantId, after: cursor } },
        {
          next(result) {
            // A refused subscribe (e.g. a cursor of another feed) arrives as a
            // result with errors, then completes.
            if (result.errors?.length) return resolve({ refused: firstError(result.errors) });
            const event = result.data?.events;
            if (!event) return;
            cursor = event.cursor;
            onEvent(event);
          },
          error: (err) => resolve({ closed: err }),
          complete: () => resolve({ closed: null }),
        },
      );
    });
  }

  async function run() {
    while (!stopped) {
      const ended = await connectOnce();
      client?.dispose();
      client = null;
      if (stopped) return;
      if (ended.refused) {
        if (ended.refused.details?.reason === 'cursorExpired') {
          cursor = await onCursorExpired();
          continue;
        }
        onStatus('denied', { reason: ended.refused.toString() });
        return;
      }
      const code = ended.closed?.code;
      if (DENIED.has(code)) {
        onStatus('denied', { reason: `the server closed the connection (${code} ${ended.closed.reason ?? ''})`.trim() });
        return;
      }
      dropped = true;
      const retryInMs = BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)];
      failures += 1;
      onStatus('offline', { retryInMs });
      await new Promise((resolve) => {
        wake = resolve;
        setTimeout(resolve, retryInMs);
      });
    }
  }

  run().catch((err) => onStatus('denied', { reason: String(err?.message ?? err) }));
  return {
    stop() {
      stopped = true;
      client?.dispose();
      wake?.();
    },
  };
}
