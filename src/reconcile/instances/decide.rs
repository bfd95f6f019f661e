//! What a run decides of a DigitalOcean instance from its row and what the provider showed or
//! answered: pure functions, one per look or call, so that every answer (made, refused,
//! rate-limited, unknown, gone) is a named, tested case.
use super::super::{ACTION_POLL_MS, ERROR_RETRY_MS, Next, is_failure, retry_after};
use super::{DELETE_ASKED, Finish, Observed};
use crate::provider::{Droplet, DropletStatus, ProviderError, ProviderResult, Refusal};
use crate::store::entity::instance;
use crate::store::state::State;

pub(super) type Decided = (Observed, Next);

/// A provider error while looking: wait, or show it as an error.
pub(in crate::reconcile) fn waiting(current: &instance::Model, err: ProviderError) -> Decided {
    let now = Observed::of(current);
    if err.refusal() == Some(Refusal::PendingEvent) {
        // The machine runs another action: look again shortly.
        return (Observed { message: Some(err.message().to_owned()), ..now }, Next::After(ACTION_POLL_MS));
    }
    if is_failure(&err) {
        return (now.state(State::Error, Some(err.message().to_owned())), retry_after(&err));
    }
    (Observed { message: Some(err.message().to_owned()), ..now }, retry_after(&err))
}

/// A made machine, read: ready once active; gone before it was ever active, the provider's
/// create failed (made again by the periodic pass); gone after, lost for good.
pub(super) fn looked(current: &instance::Model, seen: ProviderResult<Option<Droplet>>) -> Decided {
    let id = current.provider_id.clone().unwrap_or_default();
    match seen {
        Err(err) => waiting(current, err),
        Ok(None) if current.ready_at.is_none() => {
            let message = format!("the provider failed to make Droplet {id}; it is made again");
            (
                Observed { provider_id: None, ..Observed::of(current).state(State::Error, Some(message)) },
                Next::After(ERROR_RETRY_MS),
            )
        }
        Ok(None) => {
            let message = format!("Droplet {id} was deleted outside vps-graph; it is not made again");
            (Observed { lost: true, ..Observed::of(current).state(State::Error, Some(message)) }, Next::Drift)
        }
        Ok(Some(droplet)) if droplet.status == DropletStatus::Active => {
            (Observed::of(current).state(State::Ready, None), Next::Drift)
        }
        Ok(Some(_)) => (Observed::of(current), Next::After(ACTION_POLL_MS)),
    }
}

/// After a create attempt whose answer the row does not hold, what the lookup by name found:
/// ours (it carries `tag`) is taken as made; another's is an error; None sends the create.
pub(super) fn found_by_name(
    current: &instance::Model,
    found: ProviderResult<Option<Droplet>>,
    tag: &str,
) -> Option<Decided> {
    match found {
        Err(err) => Some(waiting(current, err)),
        Ok(Some(found)) if found.tags.iter().any(|t| t == tag) => {
            Some((Observed { provider_id: Some(found.id), ..Observed::of(current) }, Next::Now))
        }
        Ok(Some(_)) => {
            let message = format!("a Droplet named {} exists that this deployment did not make", current.provider_name);
            Some((Observed::of(current).state(State::Error, Some(message)), Next::After(ERROR_RETRY_MS)))
        }
        Ok(None) => None,
    }
}

/// The create's answer; `marked` is the row with this attempt recorded.
pub(super) fn created(marked: &instance::Model, answer: ProviderResult<Droplet>) -> Decided {
    let now = Observed::of(marked);
    match answer {
        Ok(Droplet { id, .. }) => {
            (Observed { provider_id: Some(id), message: None, ..now }, Next::After(ACTION_POLL_MS))
        }
        Err(ProviderError::Refused { message, .. }) => {
            // Refused: nothing was made by this attempt.
            let attempts = marked.create_attempts - 1;
            (
                Observed { create_attempts: attempts, ..now.state(State::Error, Some(message)) },
                Next::After(ERROR_RETRY_MS),
            )
        }
        Err(err) => (Observed { message: Some(err.message().to_owned()), ..now }, retry_after(&err)),
    }
}

/// What a delete does once its machine was read.
#[derive(Debug, PartialEq)]
pub(super) enum DeleteStep {
    /// Send the delete of this machine (naming the volumes that go with it).
    Send(Droplet),
    /// Nothing more to send: finish the instance's delete.
    Finish(Finish),
    Write(Decided),
}

/// The machine a delete acts on, as read: gone, the delete is done; asked already, it is
/// waited for; no longer carrying this deployment's tag, it is left running (a detach).
pub(super) fn before_delete(current: &instance::Model, seen: ProviderResult<Option<Droplet>>, tag: &str) -> DeleteStep {
    match seen {
        Ok(None) => DeleteStep::Finish(Finish::Deleted),
        // Asked once; the Droplet answers for a while before it is gone.
        Ok(Some(_)) if current.message.as_deref() == Some(DELETE_ASKED) => {
            DeleteStep::Write((Observed::of(current), Next::After(ACTION_POLL_MS)))
        }
        Ok(Some(droplet)) if !droplet.tags.iter().any(|t| t == tag) => DeleteStep::Finish(Finish::AsDetach),
        Ok(Some(droplet)) => DeleteStep::Send(droplet),
        Err(err) => DeleteStep::Write((waiting(current, err).0, Next::After(super::super::RETRY_LATER_MS))),
    }
}

/// The delete's answer.
pub(super) fn delete_sent(current: &instance::Model, answer: ProviderResult<bool>) -> Decided {
    match answer {
        Ok(_) => {
            (Observed { message: Some(DELETE_ASKED.into()), ..Observed::of(current) }, Next::After(ACTION_POLL_MS))
        }
        Err(err) => waiting(current, err),
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::outcomes::outcomes;
    use super::*;

    const TAG: &str = "vps-graph:dep";

    /// A case of a read: its name, the row, what the read showed, and the state, next look and
    /// lost flag expected.
    type ReadCase = (&'static str, instance::Model, ProviderResult<Option<Droplet>>, State, Next, bool);

    fn row() -> instance::Model {
        let t = chrono::Utc::now();
        instance::Model {
            id: "inst_1".into(),
            tenant_id: "acme".into(),
            project_id: None,
            pool_id: "pool_1".into(),
            provider_account_id: "pacct_1".into(),
            network_id: None,
            name: "web".into(),
            region: "nyc3".into(),
            size: "s-1vcpu-1gb".into(),
            image: "ubuntu-24-04-x64".into(),
            on_delete: crate::store::state::OnDelete::Delete,
            state: State::Ready,
            desired_state: crate::store::state::Desired::Present,
            provider_id: Some("101".into()),
            provider_name: "vpsg-inst-1".into(),
            create_attempts: 1,
            lost: false,
            message: None,
            version: 1,
            generation: 1,
            created_at: t,
            updated_at: t,
            ready_at: Some(t),
            deleted_at: None,
            zone: None,
            user_data: None,
        }
    }

    fn droplet(status: DropletStatus, tags: &[&str]) -> Droplet {
        Droplet {
            id: "101".into(),
            name: "vpsg-inst-1".into(),
            status,
            region: "nyc3".into(),
            vpc_id: None,
            volume_ids: vec![],
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn a_made_machine_read_is_ready_waited_for_lost_or_made_again() {
        let never_ready = instance::Model { ready_at: None, state: State::Pending, ..row() };
        let cases: Vec<ReadCase> = vec![
            ("active", row(), Ok(Some(droplet(DropletStatus::Active, &[TAG]))), State::Ready, Next::Drift, false),
            (
                "still new",
                never_ready.clone(),
                Ok(Some(droplet(DropletStatus::New, &[TAG]))),
                State::Pending,
                Next::After(ACTION_POLL_MS),
                false,
            ),
            ("gone after it ran", row(), Ok(None), State::Error, Next::Drift, true),
            ("gone before it ever ran", never_ready, Ok(None), State::Error, Next::After(ERROR_RETRY_MS), false),
        ];
        for (case, current, seen, state, next, lost) in cases {
            let (observed, got) = looked(&current, seen);
            assert_eq!((observed.state, got, observed.lost), (state, next, lost), "{case}");
        }
        let (remade, _) = looked(&instance::Model { ready_at: None, ..row() }, Ok(None));
        assert_eq!(remade.provider_id, None, "made again: the failed machine's id is forgotten");
    }

    #[test]
    fn every_answer_of_a_read_or_a_create_is_decided() {
        for (outcome, answer) in outcomes::<Option<Droplet>>(None) {
            let (observed, next) = looked(&row(), answer);
            match outcome {
                "answered" => assert_eq!(observed.state, State::Error),
                "refused" => assert_eq!(observed.state, State::Error, "{outcome}"),
                _ => {
                    assert_eq!(observed.state, State::Ready, "{outcome}: nothing concluded");
                    assert!(observed.message.is_some(), "{outcome}: said");
                    assert!(matches!(next, Next::Backoff(_)), "{outcome}: {next:?}");
                }
            }
        }
        let marked = instance::Model { provider_id: None, create_attempts: 2, state: State::Pending, ..row() };
        for (outcome, answer) in outcomes(droplet(DropletStatus::New, &[TAG])) {
            let (observed, next) = created(&marked, answer);
            match outcome {
                "answered" => {
                    assert_eq!((observed.provider_id.as_deref(), next), (Some("101"), Next::After(ACTION_POLL_MS)))
                }
                "refused" => {
                    assert_eq!(
                        (observed.state, observed.create_attempts),
                        (State::Error, 1),
                        "this attempt made nothing"
                    )
                }
                _ => assert_eq!(
                    (observed.provider_id, observed.create_attempts),
                    (None, 2),
                    "{outcome}: looked up by name next"
                ),
            }
        }
    }

    #[test]
    fn a_lost_create_is_found_by_name_and_only_ours_is_adopted() {
        let marked = instance::Model { provider_id: None, create_attempts: 1, state: State::Pending, ..row() };
        let ours = found_by_name(&marked, Ok(Some(droplet(DropletStatus::New, &[TAG]))), TAG).unwrap();
        assert_eq!((ours.0.provider_id.as_deref(), ours.1), (Some("101"), Next::Now));
        let theirs = found_by_name(&marked, Ok(Some(droplet(DropletStatus::New, &["other"]))), TAG).unwrap();
        assert_eq!((theirs.0.state, theirs.0.provider_id), (State::Error, None));
        assert!(found_by_name(&marked, Ok(None), TAG).is_none(), "nothing there: the create is sent");
    }

    #[test]
    fn a_delete_finishes_waits_or_sends_by_what_the_machine_shows() {
        let asked = instance::Model { message: Some(DELETE_ASKED.into()), ..row() };
        let busy = || Err(ProviderError::refused(422, "busy"));
        assert_eq!(before_delete(&row(), Ok(None), TAG), DeleteStep::Finish(Finish::Deleted));
        assert!(matches!(
            before_delete(&row(), Ok(Some(droplet(DropletStatus::Active, &[TAG]))), TAG),
            DeleteStep::Send(_)
        ));
        assert_eq!(
            before_delete(&row(), Ok(Some(droplet(DropletStatus::Active, &["other"]))), TAG),
            DeleteStep::Finish(Finish::AsDetach),
            "a machine whose tag is gone is left running"
        );
        assert!(matches!(
            before_delete(&asked, Ok(Some(droplet(DropletStatus::Active, &[TAG]))), TAG),
            DeleteStep::Write((_, Next::After(ACTION_POLL_MS)))
        ));
        assert!(matches!(before_delete(&row(), busy(), TAG), DeleteStep::Write((_, Next::After(_)))));
        assert_eq!(delete_sent(&row(), Ok(true)).0.message.as_deref(), Some(DELETE_ASKED));
    }
}
