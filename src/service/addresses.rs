//! Provider addresses: reserved public IPs (IPv4 or IPv6) that outlive any one instance, and
//! their assignment to one instance at a time. Calls record what the tenant wants, book one
//! `addresses`, and wake `vps.provider-resources`; the address's view (also the
//! `providerAddress.*` events' data) says what the reconciler last saw. A reserved IP has no
//! name or tag at the provider, so the row is the ownership record. Decided on the address:
//! `compute:addresses:read` to read, `compute:addresses:manage` for everything else; assigning
//! one is also decided as `compute:instances:update` on the instance.
use sea_orm::ConnectionTrait;
use serde::Serialize;
use serde_json::json;

use super::networks::{self};
use super::protection::{Protection, check_delete};
use super::volumes::{attachable_instance, invalid_state};
use super::{rows, validate};
use crate::authz::{Actor, Target};
use crate::error::{Code, Error, Result};
use crate::ids;
use crate::provider;
use crate::services::Services;
use crate::store::addresses::{self as store, NewAddress};
use crate::store::entity::{instance, provider_address as address};
use crate::store::idempotency::{self, Claim};
use crate::store::state::{AddressFamily, Assignment, Desired, State};
use crate::store::{queue, quota};
use crate::views::addresses::{AddressView, KIND, event, view};

use crate::store::addresses::QUOTA;
use crate::store::volumes::RECONCILER;
pub const READ: &str = "compute:addresses:read";
pub const MANAGE: &str = "compute:addresses:manage";

/// Where an address's assignment is: `none` (on no instance), or a state of the resource states
/// (`pending`, `ready`, `deleting` while an unassign runs, `error`).

#[derive(Serialize)]
pub struct AddressCreate {
    pub tenant_id: String,
    pub project_id: Option<String>,
    pub pool_id: String,
    pub name: String,
    pub region: String,
    /// `ipv4` or `ipv6`.
    pub family: AddressFamily,
    /// A delete is refused while it is set. Left out of the request's hash when false, so keys
    /// recorded before it existed replay.
    #[serde(skip_serializing_if = "crate::service::protection::is_false")]
    pub deletion_protection: bool,
    #[serde(skip)]
    pub idempotency_key: String,
}

impl Services {
    pub async fn address_create(&self, actor: &Actor, input: AddressCreate) -> Result<AddressView> {
        check_create(&input)?;
        let id = ids::new_id(ids::ADDRESS);
        actor.decide_create(MANAGE, &input.tenant_id, input.project_id.as_deref(), KIND, &id)?;
        let txn = self.begin().await?;
        // The key first: a replay answers what it made, whatever the state rules say now.
        let key = idempotency::Key {
            tenant_id: &input.tenant_id,
            operation: "providerAddressCreate",
            key: &input.idempotency_key,
        };
        if let Claim::Existing(existing) =
            idempotency::claim(&txn, &key, &idempotency::request_hash(&input), &id).await?
        {
            drop(txn);
            return Ok(view(&find_address(&self.db, &input.tenant_id, &existing).await?));
        }
        let pool = rows::offered_pool(&txn, &input.tenant_id, &input.pool_id).await?;
        if !provider::supports_addresses(pool.account.kind) {
            return Err(networks::unsupported("addresses", pool.account.kind));
        }
        rows::check_project(&txn, &input.tenant_id, input.project_id.as_deref()).await?;
        rows::check_region(&pool, &input.region)?;
        let new = NewAddress {
            id: &id,
            tenant_id: &input.tenant_id,
            project_id: input.project_id.as_deref(),
            pool_id: &input.pool_id,
            provider_account_id: &pool.account.id,
            name: &input.name,
            region: &input.region,
            family: input.family,
            deletion_protection: input.deletion_protection,
        };
        let created = store::insert(&txn, new, self.clock.now()).await?;
        let holding =
            quota::Holding { tenant_id: &input.tenant_id, pool_id: &input.pool_id, quota: QUOTA, resource_id: &id };
        quota::hold(&txn, &holding, 1).await?;
        queue::wake(&txn, RECONCILER, &id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("created", &created)]).await?;
        Ok(view(&created))
    }

    /// Puts the address on an instance: the assignment is recorded pending and the reconciler
    /// assigns it at the provider. One instance at a time: another is CONFLICT.
    pub async fn address_assign(
        &self,
        actor: &Actor,
        tenant_id: &str,
        address_id: &str,
        instance_id: &str,
    ) -> Result<AddressView> {
        validate::id("instanceId", ids::INSTANCE, instance_id)?;
        let txn = self.begin().await?;
        let current = self.address_for_change(&txn, actor, tenant_id, address_id).await?;
        if current.lost {
            return Err(invalid_state(
                format!("address {address_id} was released outside vps-graph and is no longer managed: delete it"),
                "notManaged",
            ));
        }
        // The address's lock, then the instance's: an instance's delete cannot slip in between.
        crate::store::lock(&txn, "instances", instance_id).await?;
        let found = attachable_instance(&txn, actor, tenant_id, instance_id).await?;
        check_instance_fits(&current, &found)?;
        match (current.instance_id.as_deref(), current.assignment_state) {
            (_, Assignment::Deleting) => {
                return Err(invalid_state(format!("address {address_id} is being unassigned"), "unassigning"));
            }
            (Some(same), _) if same == instance_id => return Ok(view(&current)),
            (Some(other), _) => {
                return Err(Error::conflict(format!(
                    "the address is assigned to {other}: unassign it first (an address is on one instance at a time)"
                ))
                .with_details(json!({ "instanceId": other })));
            }
            (None, _) => {}
        }
        let updated = store::mark_assign(&txn, &current, instance_id, self.clock.now()).await?;
        queue::wake(&txn, RECONCILER, address_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &updated)]).await?;
        Ok(view(&updated))
    }

    /// Takes the address off its instance and keeps it reserved. One on no instance is returned
    /// as it is.
    pub async fn address_unassign(&self, actor: &Actor, tenant_id: &str, address_id: &str) -> Result<AddressView> {
        let txn = self.begin().await?;
        let current = self.address_for_change(&txn, actor, tenant_id, address_id).await?;
        if current.instance_id.is_none() || current.assignment_state == Assignment::Deleting {
            return Ok(view(&current));
        }
        let now = self.clock.now();
        let updated = store::mark_unassign(&txn, &current, now).await?;
        queue::wake(&txn, RECONCILER, address_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("updated", &updated)]).await?;
        Ok(view(&updated))
    }

    /// Marks the address for release and returns it deleting; INVALID_STATE while it is
    /// assigned. Deleting one being deleted returns it.
    pub async fn address_delete(&self, actor: &Actor, tenant_id: &str, address_id: &str) -> Result<AddressView> {
        let txn = self.begin().await?;
        let current = self.address_for_update(&txn, actor, tenant_id, address_id).await?;
        if current.desired_state == Desired::Absent {
            return Ok(view(&current));
        }
        check_delete(current.deletion_protection, &format!("address {address_id}"), "providerAddressUpdate")?;
        if let Some(instance_id) = &current.instance_id {
            return Err(Error::new(Code::InvalidState, "the address is assigned: unassign it first")
                .with_details(json!({ "reason": "assigned", "instanceId": instance_id })));
        }
        let updated = store::mark_deleting(&txn, &current, self.clock.now()).await?;
        queue::wake(&txn, RECONCILER, address_id, self.clock.now_ms()).await?;
        self.commit_and_wake(txn, vec![event("deleting", &updated)]).await?;
        Ok(view(&updated))
    }

    /// Changes the address's deletion protection; the same value returns it unchanged.
    pub async fn address_update(&self, actor: &Actor, update: Protection) -> Result<AddressView> {
        let txn = self.begin().await?;
        let current = self.address_for_update(&txn, actor, &update.tenant_id, &update.id).await?;
        if current.desired_state == Desired::Absent {
            return Err(invalid_state(format!("address {} is being deleted", current.id), "deleting"));
        }
        let Some(on) = update.change_of(current.deletion_protection) else { return Ok(view(&current)) };
        let updated =
            crate::store::change::set_deletion_protection::<address::Entity>(&txn, &current.id, on, self.clock.now())
                .await?;
        self.commit(txn, vec![event("updated", &updated)]).await?;
        Ok(view(&updated))
    }

    pub async fn address_get(&self, actor: &Actor, tenant_id: &str, address_id: &str) -> Result<AddressView> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("addressId", ids::ADDRESS, address_id)?;
        let found = find_address(&self.db, tenant_id, address_id).await?;
        actor.decide(READ, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, address_id))?;
        Ok(view(&found))
    }

    /// The tenant's addresses in the order they were made, a page at a time.
    pub async fn address_list(
        &self,
        actor: &Actor,
        tenant_id: &str,
        filter: crate::store::list::ListFilter,
    ) -> Result<rows::Page<AddressView>> {
        actor.decide_list(READ, tenant_id)?;
        rows::check_list(tenant_id, &filter, ids::ADDRESS)?;
        let readable = actor.readable(READ, tenant_id, Some(KIND));
        let found = crate::store::list::page::<address::Entity>(&self.db, tenant_id, &filter, &readable).await?;
        Ok(rows::page(
            found,
            filter.first,
            |a| &a.id,
            |a| {
                actor.allows(READ, &Target::resource(tenant_id, a.project_id.as_deref(), KIND, &a.id)).then(|| view(&a))
            },
        ))
    }

    pub async fn address_watch(&self, actor: &Actor, tenant_id: &str, address_id: &str) -> Result<crate::feed::Filter> {
        let found = self.address_get(actor, tenant_id, address_id).await?;
        Ok(crate::feed::Filter::resource(actor, found.tenant_id, "providerAddress.*", found.id))
    }

    /// The address (row-locked) for a change, after deciding `compute:addresses:manage`;
    /// NOT_FOUND once deleted.
    async fn address_for_update(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        address_id: &str,
    ) -> Result<address::Model> {
        validate::tenant_id("tenantId", tenant_id)?;
        validate::id("addressId", ids::ADDRESS, address_id)?;
        crate::store::lock(conn, "provider_addresses", address_id).await?;
        let found = find_address(conn, tenant_id, address_id).await?;
        actor.decide(MANAGE, &Target::resource(tenant_id, found.project_id.as_deref(), KIND, address_id))?;
        if found.state == State::Deleted {
            return Err(Error::not_found(KIND, address_id));
        }
        Ok(found)
    }

    /// `address_for_update`, and INVALID_STATE when the address is being deleted.
    async fn address_for_change(
        &self,
        conn: &impl ConnectionTrait,
        actor: &Actor,
        tenant_id: &str,
        address_id: &str,
    ) -> Result<address::Model> {
        let found = self.address_for_update(conn, actor, tenant_id, address_id).await?;
        if found.desired_state == Desired::Absent {
            return Err(invalid_state(format!("address {address_id} is being deleted"), "deleting"));
        }
        Ok(found)
    }
}

async fn find_address(conn: &impl ConnectionTrait, tenant_id: &str, address_id: &str) -> Result<address::Model> {
    crate::store::list::find_in_tenant::<address::Entity>(conn, tenant_id, address_id)
        .await?
        .ok_or_else(|| Error::not_found(KIND, address_id))
}

fn check_create(input: &AddressCreate) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("poolId", ids::POOL, &input.pool_id)?;
    if let Some(project_id) = &input.project_id {
        validate::id("projectId", ids::PROJECT, project_id)?;
    }
    validate::name("name", &input.name)?;
    validate::region("region", &input.region)?;
    validate::idempotency_key(&input.idempotency_key)
}

/// A reserved IP is regional: the instance is on the address's account and in its region, and
/// not being deleted.
fn check_instance_fits(a: &address::Model, found: &instance::Model) -> Result<()> {
    if found.provider_account_id != a.provider_account_id || found.region != a.region {
        return Err(Error::invalid_input(
            "instanceId",
            format!("instance {} is on another provider account or region than the address", found.id),
        ));
    }
    if found.desired_state == Desired::Absent {
        return Err(invalid_state(format!("instance {} is being deleted", found.id), "instanceDeleting"));
    }
    Ok(())
}
