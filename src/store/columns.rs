//! Reads that select only the columns a caller shows, decoded by position: a page of the
//! dashboard's list reads a volume's state and size, not its 31 columns, and no column is looked
//! up by name per row. A column a read did not select holds its type's default in the model it
//! returns: a placeholder that nothing shows (the caller asked for the columns it shows).
use sea_orm::sea_query::{ArrayType, Expr, ExprTrait, PgFunc, SimpleExpr};
use sea_orm::{
    ColumnTrait, DbBackend, DbErr, EntityTrait, IdenStatic, Iterable, JoinType, ModelTrait, QueryResult, QuerySelect,
    QueryTrait, RelationDef, Select, Value,
};

use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::session::{Row, Rows, Session};
use crate::error::Result;

/// The columns a read selects, in the order they are decoded.
pub struct Columns<E: EntityTrait>(Vec<E::Column>);

impl<E: EntityTrait> Columns<E> {
    /// Every column of the table.
    pub fn all() -> Self {
        Columns(E::Column::iter().collect())
    }

    /// The columns of `names` (a view's fields, each read from the column of its name; None:
    /// all), `needed` first; every column when a name is not one, so that a field that is not a
    /// column costs speed, never a wrong value.
    pub fn named(names: Option<&[&str]>, needed: &[E::Column]) -> Self {
        let Some(names) = names else { return Columns::all() };
        let mut asked = Vec::with_capacity(names.len());
        for name in names {
            match name.parse::<E::Column>() {
                Ok(column) => asked.push(column),
                Err(_) => return Columns::all(),
            }
        }
        Columns::of(needed, asked)
    }

    /// `needed` (what every such read needs: the id, what authorization decides on), then
    /// `asked`, each once.
    pub fn of(needed: &[E::Column], asked: impl IntoIterator<Item = E::Column>) -> Self {
        let mut columns: Vec<E::Column> = Vec::with_capacity(needed.len() + 8);
        for column in needed.iter().copied().chain(asked) {
            if !columns.iter().any(|c| c.as_str() == column.as_str()) {
                columns.push(column);
            }
        }
        Columns(columns)
    }
}

/// `column` is one of `values`, bound as one parameter however many they are (a PostgreSQL
/// array; on SQLite a JSON array read by `json_each`): a page's statement has the same text, and
/// so the same prepared statement and plan, at any page size.
pub fn one_of<C: ColumnTrait>(backend: DbBackend, column: C, values: &[String]) -> SimpleExpr {
    if backend == DbBackend::Postgres {
        return column.into_expr().eq(PgFunc::any(Expr::val(values.to_vec())));
    }
    let list = serde_json::Value::from(values.to_vec()).to_string();
    let table = column.entity_name().to_string();
    Expr::cust_with_values(format!("\"{table}\".\"{}\" IN (SELECT value FROM json_each(?))", column.as_str()), [list])
}

/// The rows `query` finds, with only `columns` read.
pub async fn select<E>(session: &Session<'_>, query: Select<E>, columns: &Columns<E>) -> Result<Vec<E::Model>>
where
    E: EntityTrait,
    E::Model: Default,
{
    let statement = query.select_only().columns(columns.0.iter().copied()).build(session.backend());
    models(&session.rows(statement).await?, 0, columns)
}

/// The rows `query` finds, each with the row of `J` that `join` (an inner join) pairs it with:
/// `columns` of the one and `joined` of the other, in one statement. A row of `J` paired with
/// several is read once for each.
pub async fn select_joined<E, J>(
    session: &Session<'_>,
    query: Select<E>,
    columns: &Columns<E>,
    join: RelationDef,
    joined: &Columns<J>,
) -> Result<(Vec<E::Model>, Vec<J::Model>)>
where
    E: EntityTrait,
    E::Model: Default,
    J: EntityTrait,
    J::Model: Default,
{
    let statement = query
        .join(JoinType::InnerJoin, join)
        .select_only()
        .columns(columns.0.iter().copied())
        .columns(joined.0.iter().copied())
        .build(session.backend());
    let rows = session.rows(statement).await?;
    Ok((models(&rows, 0, columns)?, models(&rows, columns.0.len(), joined)?))
}

/// A model of `E` from each of `rows`, which hold its `columns` from `first` on.
fn models<E>(rows: &Rows, first: usize, columns: &Columns<E>) -> Result<Vec<E::Model>>
where
    E: EntityTrait,
    E::Model: Default,
{
    // Sized at once and filled in place: a model is hundreds of bytes, and a growing Vec, or a
    // model returned and then pushed, moves every one it holds.
    let mut models: Vec<E::Model> = Vec::with_capacity(rows.len());
    for row in rows.iter() {
        models.push(E::Model::default());
        if let Some(model) = models.last_mut() {
            fill::<E>(model, row, first, &columns.0)?;
        }
    }
    Ok(models)
}

/// Sets `columns` of `model` from a row holding them in that order from `first` on; the others
/// keep their defaults.
fn fill<E: EntityTrait>(model: &mut E::Model, row: Row<'_>, first: usize, columns: &[E::Column]) -> Result<(), DbErr> {
    for (index, column) in (first..).zip(columns) {
        let value = match row {
            Row::Postgres(row) => pg_value_at::<E>(row, index, *column)?,
            Row::Other(row) => value_at::<E>(row, index, *column)?,
        };
        model.try_set(*column, value)?;
    }
    Ok(())
}

/// The value at `index`, decoded as the type the model holds `column` in.
fn value_at<E: EntityTrait>(row: &QueryResult, index: usize, column: E::Column) -> Result<Value, DbErr> {
    Ok(match <E::Model as ModelTrait>::get_value_type(column) {
        ArrayType::String => Value::String(row.try_get_by_index(index)?),
        ArrayType::BigInt => Value::BigInt(row.try_get_by_index(index)?),
        ArrayType::Int => Value::Int(row.try_get_by_index(index)?),
        ArrayType::Bool => Value::Bool(row.try_get_by_index(index)?),
        ArrayType::Double => Value::Double(row.try_get_by_index(index)?),
        ArrayType::ChronoDateTimeUtc => Value::ChronoDateTimeUtc(row.try_get_by_index(index)?),
        ArrayType::Json => Value::Json(row.try_get_by_index::<Option<serde_json::Value>>(index)?.map(Box::new)),
        other => return Err(DbErr::Type(format!("column {}: no positional decoding for {other:?}", column.as_str()))),
    })
}

/// `value_at` on PostgreSQL, without sqlx's check that the column's type fits the Rust type: the
/// columns are the entity's own, whose types the migrations made, and that check (type names
/// compared value by value) was a tenth of the instructions of a page of the dashboard's list.
/// A value that does not fit still fails, in its decoding.
fn pg_value_at<E: EntityTrait>(row: &PgRow, index: usize, column: E::Column) -> Result<Value, DbErr> {
    let failed = |err: sqlx::Error| DbErr::Type(format!("column {}: {err}", column.as_str()));
    Ok(match <E::Model as ModelTrait>::get_value_type(column) {
        ArrayType::String => Value::String(row.try_get_unchecked(index).map_err(failed)?),
        ArrayType::BigInt => Value::BigInt(row.try_get_unchecked(index).map_err(failed)?),
        ArrayType::Int => Value::Int(row.try_get_unchecked(index).map_err(failed)?),
        ArrayType::Bool => Value::Bool(row.try_get_unchecked(index).map_err(failed)?),
        ArrayType::Double => Value::Double(row.try_get_unchecked(index).map_err(failed)?),
        ArrayType::ChronoDateTimeUtc => Value::ChronoDateTimeUtc(row.try_get_unchecked(index).map_err(failed)?),
        ArrayType::Json => {
            Value::Json(row.try_get_unchecked::<Option<serde_json::Value>, _>(index).map_err(failed)?.map(Box::new))
        }
        other => return Err(DbErr::Type(format!("column {}: no positional decoding for {other:?}", column.as_str()))),
    })
}
