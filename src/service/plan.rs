//! A dry run's plan made whole: the provider calls its reconcilers would make (read from what
//! the call would record and wake: none for a change no reconciler acts on), and what its meters
//! would cost over a month where the pool has a rate card.
use crate::error::Result;
use crate::plan::{Cloud, Cost, Plan, ProviderCall, Shape, Subject};
use crate::services::Services;

/// The hours of a month a monthly cost is counted over (365 × 24 / 12).
pub const HOURS_PER_MONTH: f64 = 730.0;

impl Services {
    /// `plan` of mutation `mutation`, with its provider calls and monthly cost.
    pub async fn finish_plan(&self, mutation: &str, mut plan: Plan) -> Result<Plan> {
        if plan.woke {
            plan.provider_calls = provider_calls(mutation, &plan.subjects);
        }
        plan.monthly_cost = self.monthly_cost(&plan).await?;
        Ok(plan)
    }

    /// The meters' price over a month, in the pools' currency; None when a meter's pool has no
    /// rate card (or they differ in currency), or there is no meter.
    async fn monthly_cost(&self, plan: &Plan) -> Result<Option<Cost>> {
        let mut total: Option<Cost> = None;
        // A plan's meters are of one pool or a few: each card is read once.
        let mut cards = std::collections::HashMap::new();
        for meter in &plan.meters {
            if !cards.contains_key(&meter.pool_id) {
                let card = crate::store::pools::rate_card(&self.db, &meter.pool_id).await?;
                cards.insert(meter.pool_id.clone(), card);
            }
            let Some(card) = &cards[&meter.pool_id] else {
                return Ok(None);
            };
            let amount = card.price(&meter.meter) * meter.quantity * HOURS_PER_MONTH;
            match &mut total {
                Some(cost) if cost.currency != card.currency => return Ok(None),
                Some(cost) => cost.amount += amount,
                None => total = Some(Cost { amount, currency: card.currency.clone() }),
            }
        }
        Ok(total.map(|cost| Cost { amount: round_cents(cost.amount), ..cost }))
    }
}

/// A price to the hundredth of a cent.
pub fn round_cents(amount: f64) -> f64 {
    (amount * 10_000.0).round() / 10_000.0
}

/// What the reconcilers call for each resource `subjects` names.
fn provider_calls(mutation: &str, subjects: &[Subject]) -> Vec<ProviderCall> {
    let mut calls = Vec::new();
    for subject in subjects {
        for call in calls_of(mutation, subject) {
            calls.push(ProviderCall {
                provider: subject.cloud.name().to_owned(),
                resource_id: subject.id.clone(),
                call: (*call).to_owned(),
            });
        }
    }
    calls
}

/// The provider's own names of the calls a mutation's change leads to, in the order the
/// reconciler makes them (the reads it makes to follow them left out). `shape` is the
/// resource's kind where it changes the calls (a shared volume, a Lustre filesystem).
fn calls_of(mutation: &str, subject: &Subject) -> &'static [&'static str] {
    use Cloud::{Aws, DigitalOcean as Do};
    let is = |prefix: &str| subject.id.starts_with(prefix);
    let (shared, lustre) = (subject.shape == Shape::Shared, subject.shape == Shape::Lustre);
    match (mutation, subject.cloud) {
        ("networkCreate", Do) if is("net_") => &["POST /v2/vpcs"],
        ("networkCreate", Aws) if is("net_") => &["CreateVpc", "ModifyVpcAttribute", "CreateSubnet"],
        ("networkAddSubnet", Do) => &["POST /v2/vpcs"],
        ("networkAddSubnet", Aws) => &["CreateSubnet"],
        ("networkRemoveSubnet", Do) => &["DELETE /v2/vpcs/{id}"],
        ("networkRemoveSubnet", Aws) => &["DeleteSubnet"],
        ("networkDelete", Do) => &["DELETE /v2/vpcs/{id}"],
        ("networkDelete", Aws) => &["DeleteSubnet", "DeleteVpc"],
        ("instanceCreate", Do) if is("inst_") => &["POST /v2/droplets"],
        ("instanceCreate", Aws) if is("inst_") => &["RunInstances"],
        ("instanceDelete", Do) if is("inst_") => &["DELETE /v2/droplets/{id}"],
        ("instanceDelete", Aws) if is("inst_") => &["TerminateInstances"],
        ("providerVolumeCreate" | "providerSnapshotRestore", _) if shared => &["POST /v2/nfs"],
        ("providerVolumeCreate" | "providerSnapshotRestore", _) => &["POST /v2/volumes"],
        ("providerVolumeAttach", _) if shared => &["POST /v2/nfs/{id}/actions (attach)"],
        ("providerVolumeAttach", _) => &["POST /v2/volumes/{id}/actions (attach)"],
        ("providerVolumeDetach", _) if shared => &["POST /v2/nfs/{id}/actions (detach)"],
        ("providerVolumeDetach", _) => &["POST /v2/volumes/{id}/actions (detach)"],
        ("providerVolumeResize", _) if shared => &["POST /v2/nfs/{id}/actions (resize)"],
        ("providerVolumeResize", _) => &["POST /v2/volumes/{id}/actions (resize)"],
        ("providerVolumeDelete", _) if shared => &["DELETE /v2/nfs/{id}"],
        ("providerVolumeDelete", _) => &["DELETE /v2/volumes/{id}"],
        ("providerVolumeSnapshot", _) if shared => &["POST /v2/nfs/{id}/actions (snapshot)"],
        ("providerVolumeSnapshot", _) => &["POST /v2/volumes/{id}/snapshots"],
        ("providerSnapshotDelete", _) if shared => &["DELETE /v2/nfs/snapshots/{id}"],
        ("providerSnapshotDelete", _) => &["DELETE /v2/snapshots/{id}"],
        ("providerAddressCreate", Do) => &["POST /v2/reserved_ips"],
        ("providerAddressCreate", Aws) => &["AllocateAddress"],
        ("providerAddressAssign", Do) => &["POST /v2/reserved_ips/{ip}/actions (assign)"],
        ("providerAddressAssign", Aws) => &["AssociateAddress"],
        ("providerAddressUnassign", Do) => &["POST /v2/reserved_ips/{ip}/actions (unassign)"],
        ("providerAddressUnassign", Aws) => &["DisassociateAddress"],
        ("providerAddressDelete", Do) => &["DELETE /v2/reserved_ips/{ip}"],
        ("providerAddressDelete", Aws) => &["ReleaseAddress"],
        ("filesystemCreate", _) if lustre => {
            &["CreateSecurityGroup", "AuthorizeSecurityGroupIngress", "CreateFileSystem (FSx)"]
        }
        ("filesystemCreate", _) => {
            &["CreateSecurityGroup", "AuthorizeSecurityGroupIngress", "CreateFileSystem (EFS)", "CreateMountTarget"]
        }
        ("filesystemDelete", _) if lustre => &["DeleteFileSystem (FSx)", "DeleteSecurityGroup"],
        ("filesystemDelete", _) => &["DeleteMountTarget", "DeleteFileSystem (EFS)", "DeleteSecurityGroup"],
        ("firewallRuleCreate" | "firewallRuleDelete", Do) => &["PUT /v2/firewalls/{id}"],
        ("firewallRuleCreate", Aws) => &["AuthorizeSecurityGroupIngress"],
        ("firewallRuleDelete", Aws) => &["RevokeSecurityGroupIngress"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_volume_create_is_one_call_and_an_instance_create_on_aws_runs_an_instance() {
        let subjects = vec![Subject { id: "pvol_1".into(), cloud: Cloud::DigitalOcean, shape: Shape::Plain }];
        let calls = provider_calls("providerVolumeCreate", &subjects);
        assert_eq!(calls.iter().map(|c| c.call.as_str()).collect::<Vec<_>>(), ["POST /v2/volumes"]);
        let subjects = vec![Subject { id: "inst_1".into(), cloud: Cloud::Aws, shape: Shape::Plain }];
        assert_eq!(provider_calls("instanceCreate", &subjects)[0].call, "RunInstances");
    }

    #[test]
    fn cents_round_to_the_hundredth() {
        assert_eq!(round_cents(10.000049), 10.0);
        assert_eq!(round_cents(0.12345), 0.1235);
    }
}
