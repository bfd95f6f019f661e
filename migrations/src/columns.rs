//! Column and index shapes the migrations share, so every table spells a string, a timestamp or
//! a version the same way.
use sea_orm_migration::prelude::*;

pub fn string(col: impl IntoIden, len: u32) -> ColumnDef {
    ColumnDef::new(col).string_len(len).not_null().to_owned()
}

pub fn optional(col: impl IntoIden, len: u32) -> ColumnDef {
    ColumnDef::new(col).string_len(len).null().to_owned()
}

pub fn time(col: impl IntoIden, null: bool) -> ColumnDef {
    let mut def = ColumnDef::new(col);
    def.timestamp_with_time_zone();
    if null {
        def.null()
    } else {
        def.not_null()
    };
    def.to_owned()
}

pub fn big(col: impl IntoIden, default: i64) -> ColumnDef {
    ColumnDef::new(col).big_integer().not_null().default(default).to_owned()
}

pub fn flag(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col).boolean().not_null().default(false).to_owned()
}

pub async fn index(
    manager: &SchemaManager<'_>,
    name: &str,
    table: impl IntoIden,
    cols: Vec<DynIden>,
) -> Result<(), DbErr> {
    let mut create = Index::create();
    create.name(name).table(table);
    for col in cols {
        create.col(col);
    }
    manager.create_index(create.to_owned()).await
}
