//! The accept loop: each TCP connection served over HTTP/1 (with upgrades, for WebSockets) with
//! a bound on how many are open at once (past it a new one is closed as it is accepted) and on
//! how long one may take to send a request's headers or keep still between requests, so that
//! sockets opened and never spoken on are let go. Each request knows the address it came from
//! (`ConnectInfo`), which budgets requests without a token. On `stop` no connection is taken any
//! more and open ones finish their request in flight.
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::LoadArgs;

/// How long open connections are given to finish once `stop` is told.
const DRAIN: Duration = Duration::from_secs(10);

pub async fn serve(
    listener: TcpListener,
    router: Router,
    load: LoadArgs,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let max = load.max_connections.max(1);
    let open = Arc::new(Semaphore::new(max));
    let header_timeout = Duration::from_millis(load.header_timeout_ms.max(1));
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of descriptors, most often: wait for some to be given back.
                    tracing::warn!(error = %err, "a connection could not be accepted");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(place) = open.clone().try_acquire_owned() else {
            tracing::debug!(%peer, max, "a connection over the cap was closed");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = router.clone().map_request(move |request: axum::http::Request<Incoming>| {
            let mut request = request.map(Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            request
        });
        let stop = stop.clone();
        tokio::spawn(async move {
            let _place = place;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
            let connection = connection.with_upgrades();
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = stop.cancelled() => connection.as_mut().graceful_shutdown(),
            }
            let _ = tokio::time::timeout(DRAIN, connection).await;
        });
    }
    // Wait until every connection is done (each gives its place back), or for the drain.
    let _ = tokio::time::timeout(DRAIN, open.acquire_many(max as u32)).await;
    Ok(())
}
