//! The rows `node(id:)` and `nodes(ids:)` read: the rows of one table by their ids, in one
//! statement whatever the number of ids, and the live attachments of the volumes read.
use sea_orm::sea_query::{Alias, Expr, ExprTrait};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};

use super::entity::volume_attachment as attachment;
use super::state::State;
use crate::error::Result;

/// The rows of `E` whose `id` is one of `ids` (every table has an `id`); none for no ids.
pub async fn rows_by_id<E: EntityTrait>(conn: &impl ConnectionTrait, ids: &[String]) -> Result<Vec<E::Model>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(E::find().filter(Expr::col(Alias::new("id")).is_in(ids.iter().cloned())).all(conn).await?)
}

/// The attachments (not finished) of each of `volume_ids`, oldest first.
pub async fn live_attachments_of(conn: &impl ConnectionTrait, volume_ids: &[String]) -> Result<Vec<attachment::Model>> {
    if volume_ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(attachment::Entity::find()
        .filter(attachment::Column::VolumeId.is_in(volume_ids.iter().cloned()))
        .filter(attachment::Column::State.ne(State::Deleted))
        .order_by_asc(attachment::Column::Id)
        .all(conn)
        .await?)
}
