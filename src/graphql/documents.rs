//! Parsed documents by their text. A dashboard sends the same few queries again and again, and
//! parsing one (async-graphql's parser is built on pest) took more instructions than validating
//! it twice: a tenth of a page of the list. A document is parsed once and cloned after.
use std::collections::HashMap;
use std::sync::Mutex;

use async_graphql::Request;
use async_graphql::parser::types::ExecutableDocument;

/// Documents kept at most; past it the cache starts over (a fixed set of queries fits at once).
const KEPT: usize = 256;
/// The longest query text kept: what a client writes by hand, not what it generates without end.
const LONGEST: usize = 16 * 1024;

#[derive(Default)]
pub struct Documents {
    parsed: Mutex<HashMap<String, ExecutableDocument>>,
}

impl Documents {
    /// Gives `request` its parsed document, from the cache when its text was parsed before. A
    /// text that does not parse is left to execution, which answers its error.
    pub fn parse(&self, request: &mut Request) {
        if request.query.len() > LONGEST {
            return;
        }
        let known = self.parsed.lock().unwrap_or_else(|e| e.into_inner()).get(&request.query).cloned();
        if let Some(document) = known {
            request.set_parsed_query(document);
            return;
        }
        let Ok(document) = request.parsed_query() else { return };
        let document = document.clone();
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
        documents.parse(&mut first);
        let mut again = Request::new("{ a b }");
        documents.parse(&mut again);
        assert_eq!(documents.len(), 1);
        let fields = |r: &mut Request| format!("{:?}", r.parsed_query().unwrap().operations);
        assert_eq!(fields(&mut again), fields(&mut first));
    }

    #[test]
    fn what_does_not_parse_or_is_too_long_is_not_kept_and_the_cache_is_bounded() {
        let documents = Documents::default();
        let mut broken = Request::new("{ a ");
        documents.parse(&mut broken);
        assert!(broken.parsed_query().is_err(), "its error is left to execution");
        documents.parse(&mut Request::new(format!("{{ a{} }}", "b".repeat(LONGEST))));
        assert_eq!(documents.len(), 0);
        for i in 0..KEPT + 1 {
            documents.parse(&mut Request::new(format!("{{ a{i} }}")));
        }
        assert!(documents.len() <= KEPT);
    }
}
