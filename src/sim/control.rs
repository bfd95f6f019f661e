//! The sim's control endpoints: inject faults, read call counts.
//!
//! - `POST /_sim/faults` `{"endpoint": "vpcs.create", "count": 1, "fault": "status", "status": 429}`
//!   (or `"fault": "drop"` / `"stall"`, or `"fault": "fail"` with an optional `"message"`: answered
//!   as usual, the work the call starts fails later); `DELETE /_sim/faults` clears them.
//! - `GET /_sim/calls` → `{"endpoints": {"vpcs.create": 3, …}, "names": {"vpcs.create:bc-…": 1, …}}`.
//!
//! DigitalOcean endpoints are named by path and verb (`vpcs.create`), AWS ones by service and
//! operation (`ec2.CreateSecurityGroup`, `efs.CreateMountTarget`, `fsx.CreateFileSystem`).
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use super::{Fault, Sim};

#[derive(Deserialize)]
struct FaultRequest {
    endpoint: String,
    #[serde(default = "one")]
    count: usize,
    #[serde(flatten)]
    fault: Fault,
}

fn one() -> usize {
    1
}

pub fn router(sim: Sim) -> Router {
    Router::new().route("/_sim/faults", post(inject).delete(clear)).route("/_sim/calls", get(calls)).with_state(sim)
}

async fn inject(State(sim): State<Sim>, Json(request): Json<FaultRequest>) -> Response {
    sim.inject(&request.endpoint, request.fault, request.count);
    StatusCode::NO_CONTENT.into_response()
}

async fn clear(State(sim): State<Sim>) -> Response {
    sim.clear_faults();
    StatusCode::NO_CONTENT.into_response()
}

async fn calls(State(sim): State<Sim>) -> Response {
    let (endpoints, names) = sim.all_calls();
    Json(json!({ "endpoints": endpoints, "names": names })).into_response()
}
