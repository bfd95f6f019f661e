//! `vps.instances` on AWS: one EC2 instance per instance, in the network's subnet of its zone,
//! booting with the user data that mounts its filesystems before the tenant's own part. A run
//! sends the provider name as the client token and tags the machine with it and this
//! deployment's ownership tag (in the same call), so a create whose answer was lost is found by
//! name (or answered again by EC2 for the same token) and never made twice, and a machine under
//! that name without the tag is never adopted or terminated.
use super::{DELETE_ASKED, Finish, Observed, finish_delete, mark_create_attempt, waiting, write};
use crate::boot;
use crate::error::Result;
use crate::provider::aws::Aws;
use crate::provider::{AwsInstance, InstanceRun, MachineState, ProviderError, aws_owned, aws_tags};
use crate::reconcile::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, RETRY_LATER_MS, Run};
use crate::store::entity::instance;
use crate::store::networks::ready_subnet_in_zone;
use crate::store::state::{Desired, OnDelete, State};

pub(super) async fn run(run: &Run<'_>, api: &Aws, current: &instance::Model) -> Result<Next> {
    let deployment = &run.services.deployment;
    if current.desired_state == Desired::Absent {
        return delete(run, api, current, deployment).await;
    }
    if current.lost {
        return Ok(Next::Drift);
    }
    let Some(id) = &current.provider_id else {
        return create(run, api, current, deployment).await;
    };
    let (observed, next) = match api.instance_get(&current.region, id).await {
        Err(err) => waiting(current, err),
        Ok(seen) => settle(current, seen.as_ref()),
    };
    write(run, current, observed, next).await
}

/// A made machine as EC2 shows it: running is READY; gone or ended outside is lost for good.
pub(super) fn settle(current: &instance::Model, seen: Option<&AwsInstance>) -> (Observed, Next) {
    let now = Observed::of(current);
    match seen.map(|m| m.state) {
        Some(MachineState::Running) => (now.state(State::Ready, None), Next::Drift),
        Some(MachineState::Pending) => (now, Next::After(ACTION_POLL_MS)),
        Some(other @ (MachineState::Stopping | MachineState::Stopped)) => {
            let message = format!("the machine is {}: start it at the provider", other.word());
            (now.state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        _ => {
            let id = current.provider_id.as_deref().unwrap_or_default();
            let message = format!("EC2 instance {id} was terminated outside vps-graph; it is not made again");
            (Observed { lost: true, ..now.state(State::Error, Some(message)) }, Next::Drift)
        }
    }
}

/// Ours among the machines EC2 shows under the instance's name (a terminated one is no longer
/// a machine); one only under our name is foreign.
pub(super) fn ours<'a>(found: &'a [AwsInstance], deployment: &str) -> (Option<&'a AwsInstance>, bool) {
    let live: Vec<&AwsInstance> = found.iter().filter(|m| !m.state.ending()).collect();
    let mine = live.iter().copied().find(|m| aws_owned(&m.tags, deployment));
    (mine, mine.is_none() && !live.is_empty())
}

async fn create(run: &Run<'_>, api: &Aws, current: &instance::Model, deployment: &str) -> Result<Next> {
    if current.create_attempts > 0 {
        let (observed, next) = match api.instances_find_by_name(&current.region, &current.provider_name).await {
            Err(err) => waiting(current, err),
            Ok(found) => match ours(&found, deployment) {
                (Some(mine), _) => {
                    (Observed { provider_id: Some(mine.id.clone()), ..Observed::of(current) }, Next::Now)
                }
                (None, true) => {
                    let message = format!(
                        "an EC2 instance named {} exists that this deployment did not make; it is left alone",
                        current.provider_name
                    );
                    (Observed::of(current).state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
                }
                (None, false) => return make(run, api, current, deployment).await,
            },
        };
        return write(run, current, observed, next).await;
    }
    make(run, api, current, deployment).await
}

/// Runs the machine in the network's subnet of its zone, once that subnet is made.
async fn make(run: &Run<'_>, api: &Aws, current: &instance::Model, deployment: &str) -> Result<Next> {
    let Some(subnet_id) = subnet_of(run, current).await? else {
        let observed = Observed { message: Some("waiting for the network's subnet".into()), ..Observed::of(current) };
        return write(run, current, observed, Next::After(ACTION_POLL_MS)).await;
    };
    let user_data = boot::instance_user_data(&run.services.db, current).await?;
    let Some(marked) = mark_create_attempt(run, current).await? else { return Ok(Next::Now) };
    let tags = aws_tags(&marked.provider_name, deployment);
    let (_, groups) = super::born_with(run, &marked).await?;
    let request = InstanceRun {
        image_id: &marked.image,
        instance_type: &marked.size,
        subnet_id: &subnet_id,
        security_group_ids: &groups,
        user_data: user_data.as_deref(),
        client_token: &marked.provider_name,
        tags: &tags,
    };
    let now = Observed::of(&marked);
    let (observed, next) = match api.instance_run(&marked.region, &request).await {
        Ok(machine) if aws_owned(&machine.tags, deployment) => {
            (Observed { provider_id: Some(machine.id), message: None, ..now }, Next::After(ACTION_POLL_MS))
        }
        Ok(machine) => {
            // EC2 answered an earlier machine for this token that is not ours: never adopted.
            let message = format!("EC2 answered instance {} for our client token, which is not ours", machine.id);
            (now.state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS))
        }
        Err(ProviderError::Refused { message, .. }) => {
            // Refused: nothing was made by this attempt.
            let failed =
                Observed { create_attempts: marked.create_attempts - 1, ..now.state(State::Error, Some(message)) };
            (failed, Next::After(ERROR_RETRY_MS))
        }
        Err(err) => (Observed { message: Some(err.message().to_owned()), ..now }, crate::reconcile::retry_after(&err)),
    };
    write(run, &marked, observed, next).await
}

/// The EC2 id of the network's made subnet in the instance's zone.
async fn subnet_of(run: &Run<'_>, current: &instance::Model) -> Result<Option<String>> {
    let Some(network_id) = &current.network_id else { return Ok(None) };
    ready_subnet_in_zone(&run.services.db, network_id, current.zone.clone()).await
}

/// Terminates our machine (never one without our tag: the instance then finishes as a detach)
/// and finishes once EC2 shows it terminated or gone.
async fn delete(run: &Run<'_>, api: &Aws, current: &instance::Model, deployment: &str) -> Result<Next> {
    if current.on_delete == OnDelete::Detach {
        return finish_delete(run, current, Finish::AsDetach).await;
    }
    let machine_id = match (&current.provider_id, current.create_attempts) {
        _ if current.lost => None,
        (Some(id), _) => Some(id.clone()),
        (None, 0) => None,
        (None, _) => match api.instances_find_by_name(&current.region, &current.provider_name).await {
            Ok(found) => ours(&found, deployment).0.map(|m| m.id.clone()),
            Err(err) => return write(run, current, waiting(current, err).0, Next::After(RETRY_LATER_MS)).await,
        },
    };
    let Some(id) = machine_id else { return finish_delete(run, current, Finish::Deleted).await };
    let machine = match api.instance_get(&current.region, &id).await {
        Ok(machine) => machine,
        Err(err) => return write(run, current, waiting(current, err).0, Next::After(RETRY_LATER_MS)).await,
    };
    match machine {
        None => finish_delete(run, current, Finish::Deleted).await,
        Some(m) if m.state == MachineState::Terminated => finish_delete(run, current, Finish::Deleted).await,
        Some(m) if !aws_owned(&m.tags, deployment) => finish_delete(run, current, Finish::AsDetach).await,
        Some(m) if m.state == MachineState::ShuttingDown || current.message.as_deref() == Some(DELETE_ASKED) => {
            Ok(Next::After(ACTION_POLL_MS))
        }
        Some(_) => {
            let (observed, next) = match api.instance_terminate(&current.region, &id).await {
                Ok(_) => (
                    Observed { message: Some(DELETE_ASKED.into()), ..Observed::of(current) },
                    Next::After(ACTION_POLL_MS),
                ),
                Err(err) => waiting(current, err),
            };
            write(run, current, observed, next).await
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::provider::Tag;

    fn machine(id: &str, state: &str, deployment: Option<&str>) -> AwsInstance {
        let mut tags = vec![Tag::new("Name", "bc-inst-1")];
        if let Some(d) = deployment {
            tags.push(Tag::new(crate::provider::AWS_OWNER_TAG, d));
        }
        AwsInstance {
            id: id.into(),
            state: MachineState::parse(state),
            image_id: "ami-1".into(),
            instance_type: "t3.micro".into(),
            subnet_id: None,
            vpc_id: None,
            availability_zone: None,
            private_ip: None,
            public_ip: None,
            tags,
            security_group_ids: Vec::new(),
        }
    }

    fn instance(provider_id: Option<&str>) -> instance::Model {
        let now = Utc::now();
        instance::Model {
            id: "inst_1".into(),
            tenant_id: "t".into(),
            project_id: None,
            pool_id: "pool_1".into(),
            provider_account_id: "pacct_1".into(),
            network_id: Some("net_1".into()),
            name: "m".into(),
            region: "us-east-1".into(),
            size: "t3.micro".into(),
            image: "ami-1".into(),
            on_delete: OnDelete::Delete,
            state: State::Pending,
            desired_state: Desired::Present,
            provider_id: provider_id.map(str::to_owned),
            provider_name: "bc-inst-1".into(),
            create_attempts: 1,
            lost: false,
            message: None,
            version: 1,
            generation: 1,
            created_at: now,
            updated_at: now,
            ready_at: None,
            deleted_at: None,
            zone: Some("us-east-1a".into()),
            user_data: None,
        }
    }

    #[test]
    fn a_machine_is_ready_once_running_and_lost_once_ended_outside() {
        let i = instance(Some("i-1"));
        assert_eq!(settle(&i, Some(&machine("i-1", "running", Some("d")))).0.state, State::Ready);
        let (pending, next) = settle(&i, Some(&machine("i-1", "pending", Some("d"))));
        assert_eq!((pending.state, next), (State::Pending, Next::After(ACTION_POLL_MS)));
        for gone in [None, Some(machine("i-1", "terminated", Some("d")))] {
            let (observed, _) = settle(&i, gone.as_ref());
            assert_eq!((observed.state, observed.lost), (State::Error, true), "never made again");
        }
    }

    #[test]
    fn only_our_live_machine_under_the_name_is_adopted() {
        let found = [machine("i-old", "terminated", Some("d")), machine("i-2", "running", Some("d"))];
        assert_eq!(ours(&found, "d").0.map(|m| m.id.as_str()), Some("i-2"));
        let foreign = [machine("i-9", "running", None)];
        assert_eq!(ours(&foreign, "d"), (None, true), "under our name without our tag: foreign");
        assert_eq!(ours(&[machine("i-3", "running", Some("other"))], "d"), (None, true), "another deployment's");
        assert_eq!(ours(&[machine("i-4", "terminated", None)], "d"), (None, false), "an ended one is no machine");
    }
}
