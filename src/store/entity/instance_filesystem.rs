use sea_orm::entity::prelude::*;

/// A filesystem an instance mounts at boot, at `path`; `position` keeps the order it was asked in.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "instance_filesystems")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub instance_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub filesystem_id: String,
    pub path: String,
    pub position: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
