//! Volume attachment rows: which instance a volume is wanted on, read by instance (a volume's
//! own are in `store::volumes`), and the change that lets one go.
use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};

use super::change::UserChange;
use super::entity::volume_attachment as attachment;
use crate::error::Result;
use crate::store::state::{Desired, State};

/// The attachments still wanted on the instance (their detach not asked), in no order.
pub async fn wanted_on_instance(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Vec<attachment::Model>> {
    Ok(attachment::Entity::find()
        .filter(attachment::Column::InstanceId.eq(instance_id))
        .filter(attachment::Column::DesiredState.eq(Desired::Present))
        .all(conn)
        .await?)
}

/// The instance's attachments that are not finished, in no order.
pub async fn live_on_instance(conn: &impl ConnectionTrait, instance_id: &str) -> Result<Vec<attachment::Model>> {
    Ok(attachment::Entity::find()
        .filter(attachment::Column::InstanceId.eq(instance_id))
        .filter(attachment::Column::State.ne(State::Deleted))
        .all(conn)
        .await?)
}

/// `live_on_instance` by volume id: the order their volumes' locks are taken in.
pub async fn live_on_instance_by_volume(
    conn: &impl ConnectionTrait,
    instance_id: &str,
) -> Result<Vec<attachment::Model>> {
    Ok(attachment::Entity::find()
        .filter(attachment::Column::InstanceId.eq(instance_id))
        .filter(attachment::Column::State.ne(State::Deleted))
        .order_by_asc(attachment::Column::VolumeId)
        .all(conn)
        .await?)
}

/// Marks an attachment unwanted: the reconciler detaches it.
pub async fn mark_detach(
    conn: &impl ConnectionTrait,
    a: &attachment::Model,
    now: DateTime<Utc>,
) -> Result<attachment::Model> {
    UserChange::of(&a.id).deleting().write::<attachment::Entity>(conn, now).await
}
