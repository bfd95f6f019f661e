//! What a volume call checks before it records anything: the create's input, a shared
//! volume's network, and an instance's fit for the volume (its account, region and network).
use super::*;
use crate::store::state::{Desired, ProviderKind, State, VolumeFilesystem, VolumeKind};

pub(super) fn check_create(input: &VolumeCreate) -> Result<()> {
    validate::tenant_id("tenantId", &input.tenant_id)?;
    validate::id("poolId", ids::POOL, &input.pool_id)?;
    if let Some(project_id) = &input.project_id {
        validate::id("projectId", ids::PROJECT, project_id)?;
    }
    validate::name("name", &input.name)?;
    if let Some(description) = &input.description {
        validate::max_len("description", description, 256)?;
    }
    validate::region("region", &input.region)?;
    validate::range("sizeGiB", input.size_gib, 1, MAX_SIZE_GIB)?;
    if let Some(network_id) = &input.network_id {
        validate::id("networkId", ids::NETWORK, network_id)?;
    }
    if let Some(instance_id) = &input.instance_id {
        validate::id("instanceId", ids::INSTANCE, instance_id)?;
    }
    validate::idempotency_key(&input.idempotency_key)?;
    match input.kind {
        VolumeKind::Block if input.network_id.is_some() => {
            Err(Error::invalid_input("networkId", "a block volume takes no network: only a shared volume does"))
        }
        VolumeKind::Shared if input.filesystem.is_some_and(|f| f != VolumeFilesystem::None) => {
            Err(Error::invalid_input("filesystem", "a shared volume is a filesystem already: leave filesystem out"))
        }
        VolumeKind::Shared if input.delete_with_instance => Err(Error::invalid_input(
            "deleteWithInstance",
            "a shared volume is never deleted with an instance: deleting one detaches it",
        )),
        VolumeKind::Shared if input.network_id.is_none() => {
            Err(Error::invalid_input("networkId", "a shared volume needs the network it is reachable from"))
        }
        _ => Ok(()),
    }
}

/// A shared volume's rules that need the database: the provider makes shares, the size is one it
/// would take, and the network is the tenant's, on the account, provisioned, not being deleted,
/// with a ready subnet in the region.
pub(super) async fn check_shared(
    conn: &impl ConnectionTrait,
    actor: &Actor,
    input: &VolumeCreate,
    account_id: &str,
    account_kind: ProviderKind,
) -> Result<()> {
    if !provider::supports_shared_volumes(account_kind) {
        return Err(networks::unsupported("sharedVolumes", account_kind));
    }
    let min = provider::min_share_gib(account_kind);
    if input.size_gib < min {
        return Err(Error::invalid_input("sizeGiB", format!("a {account_kind} share is {min} GiB at least"))
            .with_details(json!({ "field": "sizeGiB", "reason": "size", "min": min })));
    }
    let network_id = input.network_id.as_deref().unwrap_or_default();
    let found = store::networks::find_live_in_tenant(conn, &input.tenant_id, network_id)
        .await?
        .ok_or_else(|| Error::not_found(crate::views::networks::KIND, network_id))?;
    networks::decide_join(actor, &found)?;
    if found.provider_account_id != account_id {
        return Err(Error::invalid_input("networkId", "the network is on another provider account than the pool"));
    }
    if found.desired_state == Desired::Absent {
        return Err(invalid_state(format!("network {network_id} is being deleted"), "networkDeleting"));
    }
    let subnet =
        store::networks::wanted_subnets_in(conn, network_id, &input.region).await?.into_iter().next().ok_or_else(
            || {
                Error::invalid_input("networkId", format!("the network has no subnet in {}", input.region))
                    .with_details(json!({ "field": "networkId", "region": input.region }))
            },
        )?;
    if subnet.state != State::Ready || subnet.provider_id.is_none() {
        return Err(invalid_state(
            format!("the network's subnet in {} is not ready yet", input.region),
            "networkNotReady",
        ));
    }
    Ok(())
}

/// The instance a volume goes on: the tenant's (ACCESS_DENIED otherwise, missing or not), and the
/// caller's own `compute:instances:update` on it.
pub(crate) async fn attachable_instance(
    conn: &impl ConnectionTrait,
    actor: &Actor,
    tenant_id: &str,
    instance_id: &str,
) -> Result<instance::Model> {
    let found = crate::store::instances::find_live_in_tenant(conn, tenant_id, instance_id).await?.ok_or_else(|| {
        Error::new(Code::AccessDenied, format!("instance {instance_id} is not an instance of tenant {tenant_id}"))
            .with_details(json!({ "instanceId": instance_id }))
    })?;
    let target = Target::resource(tenant_id, found.project_id.as_deref(), crate::views::instances::KIND, instance_id);
    if !actor.allows(instances::UPDATE, &target) {
        return Err(Error::new(
            Code::AccessDenied,
            format!("{} is not granted on instance/{instance_id}", instances::UPDATE),
        )
        .with_details(json!({ "permission": instances::UPDATE, "scope": format!("instance/{instance_id}") })));
    }
    Ok(found)
}

/// The instance is on the volume's account and region (and network, for a shared volume), and is
/// not being deleted.
pub(super) fn check_instance_fits(
    found: &instance::Model,
    account_id: &str,
    region: &str,
    kind: VolumeKind,
    network_id: Option<&str>,
) -> Result<()> {
    if found.provider_account_id != account_id || found.region != region {
        return Err(Error::invalid_input(
            "instanceId",
            format!("instance {} is on another provider account or region than the volume", found.id),
        ));
    }
    if kind == VolumeKind::Shared && found.network_id.as_deref() != network_id {
        return Err(Error::invalid_input(
            "instanceId",
            format!("instance {} is not on the volume's network", found.id),
        ));
    }
    if found.desired_state == Desired::Absent {
        return Err(invalid_state(format!("instance {} is being deleted", found.id), "instanceDeleting"));
    }
    Ok(())
}
