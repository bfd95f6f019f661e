//! The one write of what a reconciler run learned, used for its write-back and for the attempt
//! marker it records before a provider call: one `UPDATE … WHERE id = ? AND <the run's lease>
//! RETURNING *`, in the caller's transaction, after the caller took its row locks in the order
//! `store::lock` gives.
//!
//! Spec and status. Every user change bumps the row's `generation`. What the provider did (an
//! id, a size, an action started, an attempt sent) is a *fact*: written whatever the user
//! changed during the call, so no provider answer is ever thrown away. What the run *decided*
//! from its observation (the state, a message) is written only while the generation is the one
//! the run looked at; otherwise the row keeps what the user's change set, and the next run
//! decides again on the new spec. The write is refused only when the run's lease is gone.
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, DynIden, Expr, ExprTrait, IntoIden, Query, SimpleExpr};
use sea_orm::{ConnectionTrait, EntityTrait, FromQueryResult};

use super::queue::{self, Claimed};
use crate::error::Result;
use crate::store::state::State;

/// A table a run writes back to (an entity of `store::entity`): how a caller above the store
/// names one without SeaORM's traits.
pub trait Table: EntityTrait + Default {}
impl<E: EntityTrait + Default> Table for E {}

/// A column of such a table (`create_attempts` …), named the same way.
pub trait Column: IntoIden {}
impl<C: IntoIden> Column for C {}

/// One row's write, built from what a run observed at `generation`.
pub struct StatusWrite {
    id: String,
    generation: i64,
    facts: Vec<(DynIden, SimpleExpr)>,
    decided: Vec<(DynIden, SimpleExpr)>,
    state: Option<State>,
    only_at_generation: bool,
}

fn col(name: &str) -> DynIden {
    Alias::new(name).into_iden()
}

impl StatusWrite {
    /// A write of row `id` from an observation made when its generation was `generation`.
    pub fn of(id: &str, generation: i64) -> Self {
        StatusWrite {
            id: id.to_owned(),
            generation,
            facts: Vec::new(),
            decided: Vec::new(),
            state: None,
            only_at_generation: false,
        }
    }

    /// What the provider did: written whatever the user changed meanwhile.
    pub fn fact(mut self, column: impl IntoIden, value: impl Into<SimpleExpr>) -> Self {
        self.facts.push((column.into_iden(), value.into()));
        self
    }

    /// One more attempt of a call in `column`, recorded before the call is sent. The marker
    /// goes with a decision, so it is written only if nothing changed since the run looked:
    /// otherwise no call is sent and the run looks again.
    pub fn attempt(mut self, column: impl IntoIden) -> Self {
        let column = column.into_iden();
        self.facts.push((column.clone(), Expr::col(column).add(1)));
        self.only_at_generation = true;
        self
    }

    /// What the run decided from its observation: written only at the generation it looked at.
    pub fn decided(mut self, column: impl IntoIden, value: impl Into<SimpleExpr>) -> Self {
        self.decided.push((column.into_iden(), value.into()));
        self
    }

    /// The state decided; the first READY stamps `ready_at`, DELETED stamps `deleted_at`.
    pub fn state(mut self, state: State) -> Self {
        self.state = Some(state);
        self
    }

    /// Writes the row of `E` if `claimed` is still this run's lease, and returns it as written
    /// (None: the lease is gone, or an attempt's spec moved; nothing was written). The row's
    /// `version` is bumped, which orders its events for clients.
    pub async fn write<E>(
        self,
        conn: &impl ConnectionTrait,
        claimed: &Claimed,
        now: DateTime<Utc>,
    ) -> Result<Option<E::Model>>
    where
        E: EntityTrait + Default,
    {
        let at_generation = Expr::col(col("generation")).eq(self.generation);
        let when_current = |column: DynIden, value: SimpleExpr| -> SimpleExpr {
            Expr::case(at_generation.clone(), value).finally(Expr::col(column)).into()
        };
        let mut update = Query::update();
        update.table(E::default());
        for (column, value) in self.facts {
            update.value(column, value);
        }
        for (column, value) in self.decided {
            update.value(column.clone(), when_current(column, value));
        }
        if let Some(state) = self.state {
            update.value(col("state"), when_current(col("state"), Expr::val(state.as_str())));
            let stamp = match state {
                State::Ready => Some("ready_at"),
                State::Deleted => Some("deleted_at"),
                _ => None,
            };
            if let Some(stamp) = stamp {
                let first = Expr::col(col(stamp)).if_null(now);
                update.value(col(stamp), when_current(col(stamp), first));
            }
        }
        update
            .value(col("version"), Expr::col(col("version")).add(1))
            .value(col("updated_at"), Expr::val(now))
            .and_where(Expr::col(col("id")).eq(self.id.as_str()))
            .and_where(Expr::exists(queue::lease_held(claimed)))
            .returning_all();
        if self.only_at_generation {
            update.and_where(at_generation);
        }
        let statement = conn.get_database_backend().build(&update);
        match conn.query_one_raw(statement).await? {
            Some(row) => Ok(Some(E::Model::from_query_result(&row, "")?)),
            None => Ok(None),
        }
    }
}
