//! Parsed documents by their text. A dashboard sends the same few queries again and again, and
//! parsing one (async-graphql's parser is built on pest) took more instructions than validating
//! it twice: a tenth of a page of the list. A document is parsed once and cloned after. A text
//! that nests deeper than the parser may safely recurse is never parsed.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_graphql::parser::Positioned;
use async_graphql::parser::types::{ExecutableDocument, OperationDefinition};
use async_graphql::{Request, ServerError};
use serde_json::json;

use super::measure::{MAX_TEXT_NESTING, text_nesting};
use crate::error::{Code, Error};

/// Documents kept at most; past it the cache starts over (a fixed set of queries fits at once).
const KEPT: usize = 256;
/// The longest query text kept: what a client writes by hand, not what it generates without end.
const LONGEST: usize = 16 * 1024;

/// The operation a request with `name` (or none) runs in `document`: the one named, or the first.
pub fn chosen<'d>(document: &'d ExecutableDocument, name: Option<&str>) -> Option<&'d Positioned<OperationDefinition>> {
    match name {
        Some(name) => document.operations.iter().find(|(n, _)| n.map(|n| n.as_str()) == Some(name)).map(|(_, op)| op),
        None => document.operations.iter().next().map(|(_, op)| op),
    }
}

/// Documents that were admitted (`Limits::admit`), by their text. Shared, so that a hit holds
/// the lock for no longer than a pointer's copy; the document is copied outside it.
#[derive(Default)]
pub struct Documents {
    parsed: Mutex<HashMap<String, Arc<ExecutableDocument>>>,
}

impl Documents {
    /// Gives `request` its parsed document, from the cache when its text was admitted before
    /// (then true): the parser's error for a text that does not parse, LIMIT_EXCEEDED (unparsed)
    /// for one that nests too deep.
    pub fn parse(&self, request: &mut Request) -> Result<bool, ServerError> {
        let known = self.parsed.lock().unwrap_or_else(|e| e.into_inner()).get(&request.query).cloned();
        if let Some(document) = known {
            request.set_parsed_query(ExecutableDocument::clone(&document));
            return Ok(true);
        }
        let nesting = text_nesting(&request.query);
        if nesting > MAX_TEXT_NESTING {
            let message = format!("the query's text nests {nesting} brackets deep, more than {MAX_TEXT_NESTING}");
            let details = json!({ "limit": "text nesting", "value": nesting, "max": MAX_TEXT_NESTING });
            return Err(super::error::server_error(Error::new(Code::LimitExceeded, message).with_details(details)));
        }
        request.parsed_query()?;
        Ok(false)
    }

    /// Keeps `request`'s document, once it was admitted: only a document that fits the limits is
    /// kept, so what anyone may send unchecked never fills the cache.
    pub fn keep(&self, request: &mut Request) {
        if request.query.len() > LONGEST {
            return;
        }
        let Ok(document) = request.parsed_query() else { return };
        let document = Arc::new(document.clone());
        let mut parsed = self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        if parsed.len() >= KEPT {
            parsed.clear();
        }
        parsed.insert(request.query.clone(), document);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.parsed.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_parsed_once_and_its_document_reused() {
        let documents = Documents::default();
        let mut first = Request::new("{ a b }");
        assert!(!documents.parse(&mut first).unwrap());
        assert_eq!(documents.len(), 0, "kept only once admitted");
        documents.keep(&mut first);
        let mut again = Request::new("{ a b }");
        assert!(documents.parse(&mut again).unwrap(), "from the cache");
        assert_eq!(documents.len(), 1);
        let fields = |r: &mut Request| format!("{:?}", r.parsed_query().unwrap().operations);
        assert_eq!(fields(&mut again), fields(&mut first));
    }

    #[test]
    fn what_does_not_parse_or_is_too_long_is_not_kept_and_the_cache_is_bounded() {
        let documents = Documents::default();
        assert!(documents.parse(&mut Request::new("{ a ")).is_err(), "the parser's error");
        let mut long = Request::new(format!("{{ a{} }}", "b".repeat(LONGEST)));
        documents.parse(&mut long).unwrap();
        documents.keep(&mut long);
        assert!(long.parsed_query().is_ok(), "parsed, not kept");
        assert_eq!(documents.len(), 0);
        for i in 0..KEPT + 1 {
            let mut request = Request::new(format!("{{ a{i} }}"));
            documents.parse(&mut request).unwrap();
            documents.keep(&mut request);
        }
        assert!(documents.len() <= KEPT);
    }

    #[test]
    fn a_text_nested_past_the_bound_is_refused_unparsed() {
        let documents = Documents::default();
        // Deep enough to overflow a thread's stack if the parser recursed into it.
        let mut deep = Request::new(format!("{{ a(x: {}) }}", "[".repeat(200_000)));
        let refused = documents.parse(&mut deep).unwrap_err();
        assert_eq!(refused.extensions.unwrap().get("code"), Some(&async_graphql::Value::from("LIMIT_EXCEEDED")));
        let nested = format!("{{ a(x: {}1{}) }}", "[".repeat(MAX_TEXT_NESTING - 2), "]".repeat(MAX_TEXT_NESTING - 2));
        documents.parse(&mut Request::new(nested)).unwrap();
    }
}
