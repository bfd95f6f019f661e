//! The one write of a user change to a resource row: the columns the change sets, its
//! `generation` and `version` bumped in SQL, `updated_at`; one `UPDATE … WHERE id = ?
//! RETURNING *`, in the caller's transaction, after the caller took its row locks in the order
//! `store::lock` gives. The bumped generation is what tells a reconciler's write-back
//! (`store::status`) that the spec moved while it looked.
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, DynIden, Expr, ExprTrait, IntoIden, Query, SimpleExpr};
use sea_orm::{ConnectionTrait, EntityTrait, FromQueryResult};

use crate::error::{Error, Result};
use crate::store::state::{Desired, State};

/// The columns one user change sets on row `id`.
pub struct UserChange {
    id: String,
    sets: Vec<(DynIden, SimpleExpr)>,
    /// Whether the change is of what the provider holds (the reconciler has work): only then
    /// does the generation move.
    spec: bool,
}

fn col(name: &str) -> DynIden {
    Alias::new(name).into_iden()
}

impl UserChange {
    /// A change of row `id` that sets nothing more: its version and generation still move (a
    /// change of its children, recorded on it).
    pub fn of(id: &str) -> Self {
        UserChange { id: id.to_owned(), sets: Vec::new(), spec: true }
    }

    /// A change of a setting of ours the provider never sees (deletion protection): its version
    /// moves, its generation does not, so a run in flight writes back what it saw as usual.
    pub fn setting(id: &str) -> Self {
        UserChange { spec: false, ..UserChange::of(id) }
    }

    pub fn set(mut self, column: impl IntoIden, value: impl Into<SimpleExpr>) -> Self {
        self.sets.push((column.into_iden(), value.into()));
        self
    }

    /// The row is no longer wanted: deleting, for its reconciler to delete at the provider.
    pub fn deleting(self) -> Self {
        self.set(col("desired_state"), Expr::val(Desired::Absent.as_str()))
            .set(col("state"), Expr::val(State::Deleting.as_str()))
    }

    /// Writes the change to the row of `E` and returns the row as written.
    pub async fn write<E>(self, conn: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<E::Model>
    where
        E: EntityTrait + Default,
    {
        let mut update = Query::update();
        update.table(E::default());
        for (column, value) in self.sets {
            update.value(column, value);
        }
        if self.spec {
            update.value(col("generation"), Expr::col(col("generation")).add(1));
        }
        update
            .value(col("version"), Expr::col(col("version")).add(1))
            .value(col("updated_at"), Expr::val(now))
            .and_where(Expr::col(col("id")).eq(self.id.as_str()))
            .returning_all();
        let statement = conn.get_database_backend().build(&update);
        let row = conn.query_one_raw(statement).await?;
        let row = row.ok_or_else(|| Error::internal(format!("{} vanished during a change", self.id)))?;
        Ok(E::Model::from_query_result(&row, "")?)
    }
}

/// Sets row `id`'s deletion protection (a setting: its generation does not move).
pub async fn set_deletion_protection<E>(
    conn: &impl ConnectionTrait,
    id: &str,
    on: bool,
    now: DateTime<Utc>,
) -> Result<E::Model>
where
    E: EntityTrait + Default,
{
    UserChange::setting(id).set(col("deletion_protection"), Expr::val(on)).write::<E>(conn, now).await
}
