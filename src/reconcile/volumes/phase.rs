//! Which step a volume's run takes, decided from what it observed first (the row, its
//! attachments, and the instances they are on): a pure choice, so that every order of the
//! rules below is a tested case, and the run reads nothing between its branches.
use std::collections::HashSet;

use super::super::Next;
use crate::store::entity::{provider_volume as volume, volume_attachment as attachment};
use crate::store::state::{Desired, State};

/// What a run observed besides the row.
pub struct Seen<'a> {
    pub attached: &'a [attachment::Model],
    /// An instance the volume is wanted on is being deleted.
    pub machine_going: bool,
    /// The instances among those an attach waits for that are ready.
    pub ready_instances: &'a HashSet<String>,
}

/// The step of one run.
#[derive(Debug, PartialEq)]
pub enum Phase<'a> {
    /// It goes with its machine: no call meanwhile (an ensure by name could make again a volume
    /// the machine's delete already took); the instance wakes it when done, else 30 s on.
    WaitForMachine,
    /// An unwanted attachment with nothing at the provider to act on: finished without a call.
    FinishUnwanted(&'a attachment::Model),
    Delete,
    /// Lost for good: nothing to do but wait for the tenant's delete.
    Lost,
    Create,
    FollowAction,
    /// Made, not yet seen ready (or in error): read until it is.
    Settle,
    /// One attach or detach.
    Converge(&'a attachment::Model),
    Resize,
    Drift,
}

pub fn phase<'a>(v: &volume::Model, seen: &Seen<'a>) -> Phase<'a> {
    if v.delete_with_instance && v.desired_state == Desired::Present && seen.machine_going {
        return Phase::WaitForMachine;
    }
    let unwanted = seen.attached.iter().find(|a| a.desired_state == Desired::Absent);
    if let Some(a) = unwanted.filter(|_| v.lost || v.provider_id.is_none()) {
        return Phase::FinishUnwanted(a);
    }
    if v.desired_state == Desired::Absent && seen.attached.is_empty() {
        return Phase::Delete;
    }
    if v.lost {
        return Phase::Lost;
    }
    if v.provider_id.is_none() {
        return Phase::Create;
    }
    if v.action_id.is_some() {
        return Phase::FollowAction;
    }
    if v.state == State::Pending || v.state == State::Error {
        return Phase::Settle;
    }
    // Detaches before a resize, so a resize the provider keeps refusing never keeps a volume
    // from being detached (and deleted).
    if let Some(a) = unwanted {
        return Phase::Converge(a);
    }
    if v.observed_size_gib.is_some_and(|seen| seen < v.size_gib) && v.desired_state == Desired::Present {
        return Phase::Resize;
    }
    match next_attach(seen) {
        Some(a) => Phase::Converge(a),
        None => Phase::Drift,
    }
}

/// When a volume becomes ready: at once if an attachment or a resize waits (a restore is
/// followed by its resize), else the drift read (a volume just read needs no second read now).
pub fn once_ready(v: &volume::Model, attached: &[attachment::Model]) -> Next {
    let restoring = v.source_snapshot_id.is_some() && v.provider_id.is_none();
    if restoring || attached.iter().any(needs_work) { Next::Now } else { Next::Drift }
}

/// The attaches waiting, whose instances a run reads to pick one (`Seen::ready_instances`).
pub fn waiting(attached: &[attachment::Model]) -> Vec<&attachment::Model> {
    attached.iter().filter(|a| a.desired_state == Desired::Present && needs_work(a)).collect()
}

/// The attach to work on: one whose instance is ready before one still waiting for its
/// instance, so one instance that never becomes ready does not hold back the others.
fn next_attach<'a>(seen: &Seen<'a>) -> Option<&'a attachment::Model> {
    let waiting = waiting(seen.attached);
    waiting.iter().find(|a| seen.ready_instances.contains(&a.instance_id)).or(waiting.first()).copied()
}

pub fn needs_work(a: &attachment::Model) -> bool {
    match a.desired_state {
        Desired::Absent => a.state != State::Deleted,
        _ => a.state != State::Ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attachment(id: &str, instance: &str, state: State, desired: Desired) -> attachment::Model {
        let one = super::super::tests::attachment(state, desired, None, None);
        attachment::Model { id: id.into(), instance_id: instance.into(), ..one }
    }

    /// A case: its name, the row, its attachments, whether a machine goes, the ready instances,
    /// and the step expected.
    type Case<'a> = (&'a str, &'a volume::Model, Vec<attachment::Model>, bool, Vec<&'a str>, &'a str);

    fn chosen(v: &volume::Model, attached: &[attachment::Model], going: bool, ready: &[&str]) -> String {
        let ready: HashSet<String> = ready.iter().map(|r| r.to_string()).collect();
        let seen = Seen { attached, machine_going: going, ready_instances: &ready };
        match phase(v, &seen) {
            Phase::FinishUnwanted(a) => format!("finish {}", a.id),
            Phase::Converge(a) => format!("converge {}", a.id),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn each_run_takes_the_first_step_its_observations_call_for() {
        let ready = super::super::tests::row();
        let with = |f: &dyn Fn(&mut volume::Model)| {
            let mut v = ready.clone();
            f(&mut v);
            v
        };
        let on = attachment("patt_on", "inst_a", State::Ready, Desired::Present);
        let off = attachment("patt_off", "inst_a", State::Ready, Desired::Absent);
        let waiting_a = attachment("patt_a", "inst_a", State::Pending, Desired::Present);
        let waiting_b = attachment("patt_b", "inst_b", State::Pending, Desired::Present);
        let goes_with = with(&|v| v.delete_with_instance = true);
        let lost = with(&|v| v.lost = true);
        let unmade = with(&|v| v.provider_id = None);
        let unwanted = with(&|v| v.desired_state = Desired::Absent);
        let acting = with(&|v| v.action_id = Some("7".into()));
        let pending = with(&|v| v.state = State::Pending);
        let failed_acting = with(&|v| {
            v.state = State::Error;
            v.action_id = Some("7".into())
        });
        let grown = with(&|v| v.size_gib = 20);
        let cases: Vec<Case> = vec![
            ("settled", &ready, vec![on.clone()], false, vec![], "Drift"),
            ("its machine goes, and it with it", &goes_with, vec![on.clone()], true, vec![], "WaitForMachine"),
            ("a machine goes, but it stays", &ready, vec![on.clone()], true, vec![], "Drift"),
            ("unwanted on a lost volume", &lost, vec![off.clone()], false, vec![], "finish patt_off"),
            ("unwanted on a volume never made", &unmade, vec![off.clone()], false, vec![], "finish patt_off"),
            ("deleted, nothing attached", &unwanted, vec![], false, vec![], "Delete"),
            ("deleted, still attached: detach first", &unwanted, vec![off.clone()], false, vec![], "converge patt_off"),
            ("lost", &lost, vec![on.clone()], false, vec![], "Lost"),
            ("not made", &unmade, vec![], false, vec![], "Create"),
            ("an action in flight", &acting, vec![off.clone()], false, vec![], "FollowAction"),
            ("an action in flight beats an error", &failed_acting, vec![], false, vec![], "FollowAction"),
            ("made, not yet ready", &pending, vec![waiting_a.clone()], false, vec![], "Settle"),
            ("a detach before a resize", &grown, vec![off.clone()], false, vec![], "converge patt_off"),
            ("a resize before an attach", &grown, vec![waiting_a.clone()], false, vec![], "Resize"),
            (
                "the attach whose instance is ready",
                &ready,
                vec![waiting_a.clone(), waiting_b.clone()],
                false,
                vec!["inst_b"],
                "converge patt_b",
            ),
            (
                "no instance ready: the first",
                &ready,
                vec![waiting_a.clone(), waiting_b.clone()],
                false,
                vec![],
                "converge patt_a",
            ),
        ];
        for (case, v, attached, going, ready_instances, expected) in cases {
            assert_eq!(chosen(v, &attached, going, &ready_instances), expected, "{case}");
        }
    }

    #[test]
    fn a_volume_made_is_looked_at_again_at_once_only_when_work_waits() {
        let v = super::super::tests::row();
        assert_eq!(once_ready(&v, &[]), Next::Drift);
        let waiting = attachment("patt_a", "inst_a", State::Pending, Desired::Present);
        assert_eq!(once_ready(&v, &[waiting]), Next::Now);
        let restore = volume::Model { source_snapshot_id: Some("psnap_1".into()), provider_id: None, ..v };
        assert_eq!(once_ready(&restore, &[]), Next::Now, "a restore is followed by its resize");
    }
}
