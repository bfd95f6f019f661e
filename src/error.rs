//! The one error type of the service. `code` is the seeds' error code, `message` is what the client
//! may read, `details` the seeds' structured details; `internal` is context for logs only.
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    InvalidInput,
    Unsupported,
    InvalidState,
    AccessDenied,
    Conflict,
    QuotaExceeded,
    NotFound,
    Unauthenticated,
    LimitExceeded,
    Internal,
    Timeout,
    /// The server, or the database it needs, cannot take the request now: retry.
    Unavailable,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidInput => "INVALID_INPUT",
            Code::Unsupported => "UNSUPPORTED",
            Code::InvalidState => "INVALID_STATE",
            Code::AccessDenied => "ACCESS_DENIED",
            Code::Conflict => "CONFLICT",
            Code::QuotaExceeded => "QUOTA_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::Unauthenticated => "UNAUTHENTICATED",
            Code::LimitExceeded => "LIMIT_EXCEEDED",
            Code::Internal => "INTERNAL",
            Code::Timeout => "TIMEOUT",
            Code::Unavailable => "UNAVAILABLE",
        }
    }
}

tokio::task_local! {
    /// The id of the request being served (set at the HTTP edge), named by its internal errors.
    pub static REQUEST_ID: String;
}

#[derive(Clone, Debug)]
pub struct Error {
    pub code: Code,
    pub message: String,
    pub details: Value,
    pub internal: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), details: Value::Null, internal: None }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// An input rule was broken: `field` names the input field, as the seeds' details do.
    pub fn invalid_input(field: &str, message: impl Into<String>) -> Self {
        Error::new(Code::InvalidInput, message).with_details(json!({ "field": field }))
    }

    pub fn not_found(kind: &str, id: &str) -> Self {
        Error::new(Code::NotFound, format!("{kind} {id} not found")).with_details(json!({ "kind": kind, "id": id }))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Error::new(Code::Conflict, message)
    }

    pub fn internal(context: impl std::fmt::Display) -> Self {
        Error {
            code: Code::Internal,
            message: "internal error".into(),
            details: Value::Null,
            internal: Some(context.to_string()),
        }
    }
}

impl Error {
    /// One line for logs, with the internal context the client never sees.
    pub fn describe(&self) -> String {
        match &self.internal {
            Some(internal) => format!("{}: {} ({internal})", self.code.as_str(), self.message),
            None => format!("{}: {}", self.code.as_str(), self.message),
        }
    }
}

// No `Display` on purpose: async-graphql converts anything `Display` into a plain error, which
// would drop `extensions.code`; the `From` impl in `graphql::error` keeps it.

impl From<sea_orm::DbErr> for Error {
    fn from(err: sea_orm::DbErr) -> Self {
        match err {
            // The database is away (or every connection busy past the wait): retry, not a fault.
            sea_orm::DbErr::ConnectionAcquire(_) | sea_orm::DbErr::Conn(_) => Error {
                code: Code::Unavailable,
                message: "the database does not answer: retry shortly".into(),
                details: Value::Null,
                internal: Some(format!("database: {err}")),
            },
            err => Error::internal(format!("database: {err}")),
        }
    }
}

impl From<sea_orm::TransactionError<Error>> for Error {
    fn from(err: sea_orm::TransactionError<Error>) -> Self {
        match err {
            sea_orm::TransactionError::Connection(db) => db.into(),
            sea_orm::TransactionError::Transaction(err) => err,
        }
    }
}
