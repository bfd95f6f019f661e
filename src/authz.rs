//! Who is calling and what they may do. A token carries grants: a permission pattern
//! (`compute:volumes:read`, `compute:*`, `*`) on a scope (`tenant/<id>`, `project/<id>`, one
//! resource such as `provider-volume/pvol_…`, or `operator` for the operator surface).
//! Decisions are made on a `Target` before anything about it is returned: another tenant's
//! resource is NOT_FOUND (existence never leaks), a missing grant ACCESS_DENIED.
use serde_json::json;

use crate::error::{Code, Error, Result};
pub use crate::store::list::Readable;

pub const OPERATOR_SCOPE: &str = "operator";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub permission: String,
    pub scope: String,
}

impl Grant {
    pub fn new(permission: &str, scope: &str) -> Self {
        Grant { permission: permission.to_owned(), scope: scope.to_owned() }
    }

    fn covers(&self, target: &Target<'_>) -> bool {
        if self.scope == OPERATOR_SCOPE {
            return true;
        }
        let Some((kind, id)) = self.scope.split_once('/') else {
            return false;
        };
        match kind {
            "tenant" => id == target.tenant_id,
            "project" => target.project_id == Some(id),
            _ => kind == target.kind && target.id == Some(id),
        }
    }
}

/// Whether a permission pattern allows `permission`: segments separated by `:`, `*` matches one
/// segment, and a trailing `*` matches the rest.
pub fn permission_matches(pattern: &str, permission: &str) -> bool {
    let mut wanted = permission.split(':');
    let mut segments = pattern.split(':').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        if segment == "*" && last {
            return wanted.next().is_some();
        }
        match wanted.next() {
            Some(w) if segment == "*" || segment == w => {}
            _ => return false,
        }
    }
    wanted.next().is_none()
}

/// What a decision is made on: a resource of a tenant (optionally of a project), or the tenant
/// itself when `id` is None.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub tenant_id: &'a str,
    pub project_id: Option<&'a str>,
    pub kind: &'a str,
    pub id: Option<&'a str>,
}

impl<'a> Target<'a> {
    pub fn tenant(tenant_id: &'a str) -> Self {
        Target { tenant_id, project_id: None, kind: "tenant", id: None }
    }

    pub fn resource(tenant_id: &'a str, project_id: Option<&'a str>, kind: &'a str, id: &'a str) -> Self {
        Target { tenant_id, project_id, kind, id: Some(id) }
    }
}

/// The authenticated caller of one request.
#[derive(Clone, Debug)]
pub struct Actor {
    /// None for the static admin token given at start.
    pub token_id: Option<String>,
    /// None for an operator token.
    pub tenant_id: Option<String>,
    pub grants: Vec<Grant>,
}

impl Actor {
    /// An operator holds `*` on the `operator` scope (the only grant that scope takes).
    pub fn is_operator(&self) -> bool {
        self.grants.iter().any(|g| g.scope == OPERATOR_SCOPE && g.permission == "*")
    }

    /// Who this is and what it may do, as one string: two actors with the same are decided
    /// alike on everything (what lets subscriptions be shared, `graphql::shared`).
    pub fn identity(&self) -> String {
        let mut identity =
            format!("{}|{}", self.token_id.as_deref().unwrap_or("-"), self.tenant_id.as_deref().unwrap_or("-"));
        for grant in &self.grants {
            identity.push('|');
            identity.push_str(&grant.permission);
            identity.push('@');
            identity.push_str(&grant.scope);
        }
        identity
    }

    /// The operator the service itself acts as (start-up, the static admin token).
    pub fn system() -> Actor {
        Actor { token_id: None, tenant_id: None, grants: vec![Grant::new("*", OPERATOR_SCOPE)] }
    }

    /// Decides `permission` on `target`: Ok, NOT_FOUND for another tenant's target, or ACCESS_DENIED.
    pub fn decide(&self, permission: &str, target: &Target<'_>) -> Result<()> {
        if self.allows(permission, target) {
            return Ok(());
        }
        if !self.is_operator() && self.tenant_id.as_deref() != Some(target.tenant_id) {
            return Err(match target.id {
                Some(id) => Error::not_found(target.kind, id),
                None => Error::not_found("tenant", target.tenant_id),
            });
        }
        Err(access_denied(permission, target))
    }

    /// Decides making a resource of `kind` (its new id `id`) in `project_id` of `tenant_id`: a
    /// refusal names the project the caller asked for (or the tenant), which is its own input,
    /// where one on an existing resource names only that resource.
    pub fn decide_create(
        &self,
        permission: &str,
        tenant_id: &str,
        project_id: Option<&str>,
        kind: &str,
        id: &str,
    ) -> Result<()> {
        let target = Target::resource(tenant_id, project_id, kind, id);
        if self.allows(permission, &target) {
            return Ok(());
        }
        if !self.is_operator() && self.tenant_id.as_deref() != Some(tenant_id) {
            return Err(Error::not_found("tenant", tenant_id));
        }
        let scope = match project_id {
            Some(project_id) => format!("project/{project_id}"),
            None => format!("tenant/{tenant_id}"),
        };
        Err(Error::new(Code::AccessDenied, format!("{permission} is not granted on {scope}"))
            .with_details(json!({ "permission": permission, "scope": scope })))
    }

    /// Whether `permission` is granted on `target` (for filtering lists and feeds).
    pub fn allows(&self, permission: &str, target: &Target<'_>) -> bool {
        if self.is_operator() {
            return true;
        }
        self.tenant_id.as_deref() == Some(target.tenant_id)
            && self.grants.iter().any(|g| g.covers(target) && permission_matches(&g.permission, permission))
    }

    /// Which of the tenant's resources of `kind` the caller may read with `permission` (of any
    /// kind for None): all of them with a grant on the tenant, else those of the projects and
    /// the resources its grants name. Lists read only these.
    pub fn readable(&self, permission: &str, tenant_id: &str, kind: Option<&str>) -> Readable {
        if self.is_operator() {
            return Readable::All;
        }
        let (mut projects, mut ids) = (Vec::new(), Vec::new());
        if self.tenant_id.as_deref() == Some(tenant_id) {
            for grant in self.grants.iter().filter(|g| permission_matches(&g.permission, permission)) {
                match grant.scope.split_once('/') {
                    Some(("tenant", id)) if id == tenant_id => return Readable::All,
                    Some(("project", id)) => projects.push(id.to_owned()),
                    Some((of, id)) if kind.is_none_or(|kind| kind == of) => ids.push(id.to_owned()),
                    _ => {}
                }
            }
        }
        Readable::Only { projects, ids }
    }

    /// A list is decided on the tenant: the caller must belong to it (else NOT_FOUND) and hold the
    /// permission somewhere in it (else ACCESS_DENIED); the items are then filtered with `allows`.
    pub fn decide_list(&self, permission: &str, tenant_id: &str) -> Result<()> {
        if self.is_operator() {
            return Ok(());
        }
        if self.tenant_id.as_deref() != Some(tenant_id) {
            return Err(Error::not_found("tenant", tenant_id));
        }
        if self.grants.iter().any(|g| permission_matches(&g.permission, permission)) {
            Ok(())
        } else {
            Err(access_denied(permission, &Target::tenant(tenant_id)))
        }
    }

    /// The operator surface: tenants, accounts, pools, quotas, tokens.
    pub fn require_operator(&self) -> Result<()> {
        if self.is_operator() {
            Ok(())
        } else {
            Err(Error::new(Code::AccessDenied, "this call needs the operator grant")
                .with_details(json!({ "permission": "*", "scope": OPERATOR_SCOPE })))
        }
    }
}

fn access_denied(permission: &str, target: &Target<'_>) -> Error {
    let scope = match target.id {
        Some(id) => format!("{}/{id}", target.kind),
        None => format!("tenant/{}", target.tenant_id),
    };
    Error::new(Code::AccessDenied, format!("{permission} is not granted on {scope}"))
        .with_details(json!({ "permission": permission, "scope": scope }))
}

/// The permission that reads a subject of `kind` (used to filter the event feed).
pub fn read_permission(kind: &str) -> &'static str {
    match kind {
        "tenant" => "compute:tenants:read",
        "project" => "compute:projects:read",
        "pool" => "compute:pools:read",
        "quota" => "compute:quotas:read",
        "token" => "compute:tokens:read",
        "provider-volume" | "provider-snapshot" => "compute:volumes:read",
        "provider-address" => "compute:addresses:read",
        "network" | "filesystem" => "compute:networks:read",
        "instance" => "compute:instances:read",
        _ => "compute:events:read",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actor(grants: &[(&str, &str)]) -> Actor {
        Actor {
            token_id: Some("tok_x".into()),
            tenant_id: Some("acme".into()),
            grants: grants.iter().map(|(p, s)| Grant::new(p, s)).collect(),
        }
    }

    #[test]
    fn permission_patterns_match_by_segment() {
        assert!(permission_matches("*", "compute:volumes:read"));
        assert!(permission_matches("compute:*", "compute:volumes:read"));
        assert!(permission_matches("compute:*:read", "compute:volumes:read"));
        assert!(!permission_matches("compute:*:read", "compute:volumes:manage"));
        assert!(permission_matches("compute:volumes:read", "compute:volumes:read"));
        assert!(!permission_matches("compute:volumes", "compute:volumes:read"));
        assert!(!permission_matches("compute:volumes:read:x", "compute:volumes:read"));
    }

    #[test]
    fn foreign_tenant_is_not_found_and_missing_grant_is_access_denied() {
        let reader = actor(&[("compute:volumes:read", "tenant/acme")]);
        let foreign = Target::resource("other", None, "provider-volume", "pvol_1");
        assert_eq!(reader.decide("compute:volumes:read", &foreign).unwrap_err().code, Code::NotFound);
        let own = Target::resource("acme", None, "provider-volume", "pvol_1");
        assert!(reader.decide("compute:volumes:read", &own).is_ok());
        assert_eq!(reader.decide("compute:volumes:manage", &own).unwrap_err().code, Code::AccessDenied);
    }

    #[test]
    fn project_and_resource_scopes_cover_only_their_resources() {
        let scoped = actor(&[("compute:*", "project/prj_a"), ("compute:volumes:read", "provider-volume/pvol_9")]);
        let in_project = Target::resource("acme", Some("prj_a"), "provider-volume", "pvol_1");
        let elsewhere = Target::resource("acme", Some("prj_b"), "provider-volume", "pvol_2");
        let named = Target::resource("acme", Some("prj_b"), "provider-volume", "pvol_9");
        assert!(scoped.allows("compute:volumes:manage", &in_project));
        assert!(!scoped.allows("compute:volumes:read", &elsewhere));
        assert!(scoped.allows("compute:volumes:read", &named));
        assert!(!scoped.allows("compute:volumes:manage", &named));
        assert!(!scoped.allows("compute:pools:read", &Target::tenant("acme")));
    }

    #[test]
    fn what_a_list_may_read_follows_the_grants_that_allow_it() {
        let scoped = actor(&[
            ("compute:*", "project/prj_a"),
            ("compute:volumes:read", "provider-volume/pvol_9"),
            ("compute:addresses:read", "tenant/acme"),
        ]);
        let only = |projects: &[&str], ids: &[&str]| Readable::Only {
            projects: projects.iter().map(|p| p.to_string()).collect(),
            ids: ids.iter().map(|i| i.to_string()).collect(),
        };
        assert_eq!(
            scoped.readable("compute:volumes:read", "acme", Some("provider-volume")),
            only(&["prj_a"], &["pvol_9"])
        );
        assert_eq!(scoped.readable("compute:volumes:read", "acme", Some("instance")), only(&["prj_a"], &[]));
        assert_eq!(scoped.readable("compute:addresses:read", "acme", Some("provider-address")), Readable::All);
        assert_eq!(scoped.readable("compute:volumes:read", "other", None), only(&[], &[]), "another tenant: none");
        assert_eq!(Actor::system().readable("compute:volumes:read", "other", None), Readable::All);
    }
}
