//! The EC2 query protocol's two halves: the form-encoded request (indexed lists such as
//! `IpPermissions.1.Groups.1.GroupId`) and the XML answer (2016-11-15 namespace, `<requestId>`,
//! `<item>` lists). Text only; no model state.

/// `a=1&b=x%20y` → pairs, in order (`+` is a space).
pub(super) fn form(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push((hi * 16 + lo) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A parsed query request: lookups by exact name and by indexed prefix.
pub(super) struct Params(Vec<(String, String)>);

impl Params {
    pub(super) fn parse(body: &[u8]) -> Params {
        Params(form(body))
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// `Prefix.1`, `Prefix.2`, … in index order.
    pub(super) fn list(&self, prefix: &str) -> Vec<String> {
        let mut items: Vec<(u32, String)> = self
            .0
            .iter()
            .filter_map(|(k, v)| {
                let n = k.strip_prefix(prefix)?.strip_prefix('.')?.parse().ok()?;
                Some((n, v.clone()))
            })
            .collect();
        items.sort_by_key(|(n, _)| *n);
        items.into_iter().map(|(_, v)| v).collect()
    }

    /// The members of `Prefix.N.*`, one `Params` per index, in index order.
    pub(super) fn structs(&self, prefix: &str) -> Vec<Params> {
        let mut groups: std::collections::BTreeMap<u32, Vec<(String, String)>> = Default::default();
        for (k, v) in &self.0 {
            let Some(rest) = k.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else { continue };
            let Some((n, member)) = rest.split_once('.') else { continue };
            let Ok(n) = n.parse::<u32>() else { continue };
            groups.entry(n).or_default().push((member.to_owned(), v.clone()));
        }
        groups.into_values().map(Params).collect()
    }

    /// The whole request but `Action`/`Version`, sorted: what an idempotent retry repeats.
    pub(super) fn signature(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<_> =
            self.0.iter().filter(|(k, _)| k != "Action" && k != "Version" && k != "ClientToken").cloned().collect();
        pairs.sort();
        pairs
    }

    /// `Filter.N.Name` with its `Filter.N.Value.M`s.
    pub(super) fn filters(&self) -> Vec<(String, Vec<String>)> {
        self.structs("Filter").iter().map(|f| (f.get("Name").unwrap_or_default().to_owned(), f.list("Value"))).collect()
    }

    /// Tags of `TagSpecification.N` for `resource_type` (or any type when the spec names none).
    pub(super) fn tags(&self, resource_type: &str) -> Vec<(String, String)> {
        self.structs("TagSpecification")
            .iter()
            .filter(|spec| spec.get("ResourceType").is_none_or(|t| t == resource_type))
            .flat_map(|spec| {
                spec.structs("Tag")
                    .iter()
                    .map(|t| {
                        (t.get("Key").unwrap_or_default().to_owned(), t.get("Value").unwrap_or_default().to_owned())
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

/// `<name>text</name>`, the text escaped.
pub(super) fn el(name: &str, text: &str) -> String {
    format!("<{name}>{}</{name}>", escape(text))
}

/// `<name><item>…</item>…</name>` around already-written items.
pub(super) fn items(name: &str, items: impl IntoIterator<Item = String>) -> String {
    let inner: String = items.into_iter().map(|i| format!("<item>{i}</item>")).collect();
    format!("<{name}>{inner}</{name}>")
}

pub(super) fn tag_set(tags: &[(String, String)]) -> String {
    items("tagSet", tags.iter().map(|(k, v)| format!("{}{}", el("key", k), el("value", v))))
}

/// A success answer: `<{Action}Response xmlns=…><requestId/>{inner}</…>`.
pub(super) fn answer(action: &str, inner: &str) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{action}Response xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">{}{inner}</{action}Response>",
        el("requestId", &super::request_id())
    );
    ([(axum::http::header::CONTENT_TYPE, "text/xml;charset=UTF-8")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexed_lists_and_structs_come_back_in_index_order() {
        let body = b"Action=AuthorizeSecurityGroupIngress&IpPermissions.2.IpProtocol=tcp&IpPermissions.1.IpRanges.1.CidrIp=10.0.0.0%2F16\
&IpPermissions.1.IpProtocol=udp&IpPermissions.10.IpProtocol=icmp&GroupId.2=b&GroupId.1=a&Name=x+y%26z";
        let params = Params::parse(body);
        let perms = params.structs("IpPermissions");
        assert_eq!(perms.len(), 3);
        assert_eq!(perms[0].get("IpProtocol"), Some("udp"));
        assert_eq!(perms[0].structs("IpRanges")[0].get("CidrIp"), Some("10.0.0.0/16"));
        assert_eq!(perms[2].get("IpProtocol"), Some("icmp"));
        assert_eq!(params.list("GroupId"), ["a", "b"]);
        assert_eq!(params.get("Name"), Some("x y&z"));
    }

    #[test]
    fn a_broken_percent_escape_is_kept_as_text() {
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("a%2"), "a%2");
        assert_eq!(decode("%zz"), "%zz");
    }
}
