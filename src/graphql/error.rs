//! Service errors as GraphQL errors: the seeds' code in `extensions.code`, their details in
//! `extensions.details`. An internal error shows only a generic message and a request id; its
//! context goes to the log.
use async_graphql::{ErrorExtensionValues, ServerError, Value};

use crate::error::{Code, Error};
use crate::ids;

impl From<Error> for async_graphql::Error {
    fn from(err: Error) -> Self {
        let mut message = err.message.clone();
        if err.code == Code::Internal {
            let incident = crate::error::REQUEST_ID.try_with(String::clone).unwrap_or_else(|_| ids::new_id("req"));
            tracing::error!(incident = %incident, error = err.describe(), "internal error");
            message = format!("internal error (request id {incident})");
        }
        let mut gql = async_graphql::Error::new(message);
        gql.extensions = Some(extensions(&err));
        gql
    }
}

fn extensions(err: &Error) -> ErrorExtensionValues {
    let mut ext = ErrorExtensionValues::default();
    ext.set("code", err.code.as_str());
    if !err.details.is_null()
        && let Ok(details) = Value::from_json(err.details.clone())
    {
        ext.set("details", details);
    }
    ext
}

/// A request-level error (limits), shaped like the resolvers' errors.
pub fn server_error(err: Error) -> ServerError {
    let mut server = ServerError::new(err.message.clone(), None);
    server.extensions = Some(extensions(&err));
    server
}
