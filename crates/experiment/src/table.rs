//! A result table written twice from the same rows: as CSV, and as Parquet
//! beside it (issue 16: "results also as Parquet, alongside CSV; the Python
//! side reads them with pandas/pyarrow").
//!
//! Rows are the CSV's serde row structs. For Parquet each row is flattened
//! into [`Cell`]s by a small serde serializer that, unlike the CSV writer,
//! is not human-readable: a number the CSV writes as text (`Decimal`) comes
//! through as an f64. A column's Parquet type is the type of its values:
//! unsigned integers as INT64 (UINT_64), signed as INT64, floats as DOUBLE,
//! booleans as BOOLEAN, text as UTF-8 strings; an empty cell is a null. A
//! column with no value in any row (an optional quantity no run had) is a
//! DOUBLE of nulls, which is what pandas makes of it anyway. A sweep's axis
//! values, text in the CSV, become INT64 or DOUBLE when every value of the
//! column is a number written out (`2`, `150.0`).

use parquet::basic::{Compression, IntType, LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde::ser::{self, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One cell of a flattened row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
}

/// Why a row could not be flattened (a row struct with a map or an enum
/// carrying data: none of meshbed's has one).
#[derive(Debug)]
pub struct CellError(String);

impl std::fmt::Display for CellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CellError {}

impl ser::Error for CellError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        CellError(msg.to_string())
    }
}

/// The cells of `row`: a struct, or a tuple of structs and sequences of
/// plain values (the keys, the axes, the row), in order.
pub fn cells<T: Serialize + ?Sized>(row: &T) -> Result<Vec<Cell>, CellError> {
    let mut out = Vec::new();
    row.serialize(CellSerializer { out: &mut out })?;
    Ok(out)
}

struct CellSerializer<'a> {
    out: &'a mut Vec<Cell>,
}

impl CellSerializer<'_> {
    fn push(self, c: Cell) -> Result<(), CellError> {
        self.out.push(c);
        Ok(())
    }
}

fn unsupported(what: &str) -> CellError {
    CellError(format!("a result row cannot hold {what}: expected plain values, structs, tuples and sequences"))
}

impl<'a> ser::Serializer for CellSerializer<'a> {
    type Ok = ();
    type Error = CellError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = ser::Impossible<(), CellError>;
    type SerializeMap = ser::Impossible<(), CellError>;
    type SerializeStruct = Self;
    type SerializeStructVariant = ser::Impossible<(), CellError>;

    /// Numbers as numbers (`Decimal` writes text only for people).
    fn is_human_readable(&self) -> bool {
        false
    }
    fn serialize_bool(self, v: bool) -> Result<(), CellError> {
        self.push(Cell::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), CellError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), CellError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), CellError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), CellError> {
        self.push(Cell::I64(v))
    }
    fn serialize_u8(self, v: u8) -> Result<(), CellError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), CellError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), CellError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), CellError> {
        self.push(Cell::U64(v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), CellError> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), CellError> {
        self.push(Cell::F64(v))
    }
    fn serialize_char(self, v: char) -> Result<(), CellError> {
        self.push(Cell::Str(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<(), CellError> {
        self.push(Cell::Str(v.to_string()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), CellError> {
        Err(unsupported("bytes"))
    }
    fn serialize_none(self) -> Result<(), CellError> {
        self.push(Cell::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), CellError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CellError> {
        self.push(Cell::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), CellError> {
        self.push(Cell::Null)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), CellError> {
        self.push(Cell::Str(variant.to_string()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), CellError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), CellError> {
        Err(unsupported("an enum with data"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, CellError> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, CellError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, CellError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, CellError> {
        Err(unsupported("an enum with data"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CellError> {
        Err(unsupported("a map"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, CellError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, CellError> {
        Err(unsupported("an enum with data"))
    }
}

/// Every compound adds its elements' cells in order.
macro_rules! flatten {
    ($($trait:ident :: $method:ident ($($name:ident),*)),*) => {$(
        impl ser::$trait for CellSerializer<'_> {
            type Ok = ();
            type Error = CellError;
            fn $method<T: Serialize + ?Sized>(&mut self, $(_: $name,)* value: &T) -> Result<(), CellError> {
                value.serialize(CellSerializer { out: &mut *self.out })
            }
            fn end(self) -> Result<(), CellError> {
                Ok(())
            }
        }
    )*};
}
flatten!(
    SerializeSeq::serialize_element(),
    SerializeTuple::serialize_element(),
    SerializeTupleStruct::serialize_field(),
    SerializeStruct::serialize_field(StaticStr)
);
type StaticStr = &'static str;

/// A table being written as `NAME.csv` and, at [`TableWriter::finish`],
/// `NAME.parquet` beside it; or, made by [`TableWriter::in_memory`], only
/// kept for [`TableWriter::into_table`].
pub struct TableWriter {
    /// The CSV file and its path; `None` in memory.
    csv: Option<(csv::Writer<std::fs::File>, PathBuf)>,
    header: Vec<String>,
    /// Columns of text to type by their values (a sweep's axes).
    typed_text: Vec<bool>,
    rows: Vec<Vec<Cell>>,
}

fn io_error(e: impl std::fmt::Display) -> csv::Error {
    std::io::Error::other(e.to_string()).into()
}

impl TableWriter {
    /// Starts `csv_path` with `header`; the columns in `typed_text` hold
    /// text to type by its values in the Parquet file.
    pub fn create(
        csv_path: &Path,
        header: Vec<String>,
        typed_text: std::ops::Range<usize>,
    ) -> csv::Result<TableWriter> {
        let mut csv = csv::WriterBuilder::new().has_headers(false).from_path(csv_path)?;
        csv.write_record(&header)?;
        let mut w = TableWriter::in_memory(header, typed_text);
        w.csv = Some((csv, csv_path.to_path_buf()));
        Ok(w)
    }

    /// A table kept in memory only, typed as [`TableWriter::create`] types
    /// the Parquet file's columns.
    pub fn in_memory(header: Vec<String>, typed_text: std::ops::Range<usize>) -> TableWriter {
        let typed_text = (0..header.len()).map(|c| typed_text.contains(&c)).collect();
        TableWriter { csv: None, header, typed_text, rows: Vec::new() }
    }

    /// Writes one row (the same value the CSV writer serialises).
    pub fn serialize<T: Serialize>(&mut self, row: T) -> csv::Result<()> {
        let c = cells(&row).map_err(io_error)?;
        if c.len() != self.header.len() {
            let name = self.csv.as_ref().map_or("<memory>".into(), |(_, p)| p.display().to_string());
            return Err(io_error(format!(
                "{name}: a row of {} cells under a header of {} columns",
                c.len(),
                self.header.len()
            )));
        }
        if let Some((csv, _)) = &mut self.csv {
            csv.serialize(row)?;
        }
        self.rows.push(c);
        Ok(())
    }

    /// The table's typed columns, by header (what the Parquet file holds).
    pub fn into_table(self) -> Table {
        let columns = (0..self.header.len())
            .map(|c| column(&self.rows.iter().map(|r| &r[c]).collect::<Vec<_>>(), self.typed_text[c]))
            .collect();
        Table { header: self.header, columns }
    }

    /// Flushes the CSV and writes the Parquet file; both paths (none in
    /// memory).
    pub fn finish(mut self) -> csv::Result<Vec<PathBuf>> {
        let Some((mut csv, csv_path)) = self.csv.take() else { return Ok(Vec::new()) };
        csv.flush()?;
        let parquet_path = csv_path.with_extension("parquet");
        write_parquet(&parquet_path, &self.into_table())
            .map_err(|e| io_error(format!("{}: {e}", parquet_path.display())))?;
        Ok(vec![csv_path, parquet_path])
    }
}

/// A table's columns with their types: what the Parquet file holds, and
/// what the Python module hands over as an Arrow record batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub columns: Vec<Column>,
}

/// One typed column; `None` is an empty cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    Bool(Vec<Option<bool>>),
    U64(Vec<Option<u64>>),
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Str(Vec<Option<String>>),
}

/// A column's Parquet type.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Bool,
    U64,
    I64,
    F64,
    Str,
}

/// The text a cell has in the CSV (for a column of mixed kinds).
fn text(c: &Cell) -> Option<String> {
    match c {
        Cell::Null => None,
        Cell::Bool(b) => Some(b.to_string()),
        Cell::U64(v) => Some(v.to_string()),
        Cell::I64(v) => Some(v.to_string()),
        Cell::F64(v) => Some(v.to_string()),
        Cell::Str(s) => Some(s.clone()),
    }
}

/// Text that is an f64 written out: as `Display` writes it (`150`), or as
/// TOML and `Debug` write it (`150.0`).
fn reads_as_f64(s: &str) -> bool {
    s.parse::<f64>().is_ok_and(|v| v.to_string() == s || format!("{v:?}") == s)
}

/// The kind of a column's cells.
fn kind(cells: &[&Cell], typed_text: bool) -> Kind {
    let values: Vec<&Cell> = cells.iter().copied().filter(|c| **c != Cell::Null).collect();
    let all = |f: fn(&Cell) -> bool| values.iter().all(|c| f(c));
    if values.is_empty() {
        return Kind::F64;
    }
    if all(|c| matches!(c, Cell::Bool(_))) {
        Kind::Bool
    } else if all(|c| matches!(c, Cell::U64(_))) {
        Kind::U64
    } else if all(|c| matches!(c, Cell::I64(_))) {
        Kind::I64
    } else if all(|c| matches!(c, Cell::F64(_))) {
        Kind::F64
    } else if typed_text && all(|c| matches!(c, Cell::Str(s) if s.parse::<i64>().is_ok_and(|v| v.to_string() == *s))) {
        Kind::I64
    } else if typed_text && all(|c| matches!(c, Cell::Str(s) if reads_as_f64(s))) {
        Kind::F64
    } else {
        Kind::Str
    }
}

/// A column's cells as values of its kind.
fn column(cells: &[&Cell], typed_text: bool) -> Column {
    let each = cells.iter();
    match kind(cells, typed_text) {
        Kind::Bool => Column::Bool(each.map(|c| if let Cell::Bool(b) = c { Some(*b) } else { None }).collect()),
        Kind::U64 => Column::U64(each.map(|c| if let Cell::U64(v) = c { Some(*v) } else { None }).collect()),
        Kind::I64 => Column::I64(
            each.map(|c| match c {
                Cell::I64(v) => Some(*v),
                Cell::Str(s) => s.parse().ok(),
                _ => None,
            })
            .collect(),
        ),
        Kind::F64 => Column::F64(
            each.map(|c| match c {
                Cell::F64(v) => Some(*v),
                Cell::Str(s) => s.parse().ok(),
                _ => None,
            })
            .collect(),
        ),
        Kind::Str => Column::Str(each.map(|c| text(c)).collect()),
    }
}

/// Writes `table` as one Snappy-compressed row group.
fn write_parquet(path: &Path, table: &Table) -> Result<(), parquet::errors::ParquetError> {
    let fields = table
        .header
        .iter()
        .zip(&table.columns)
        .map(|(name, column)| {
            let (physical, logical) = match column {
                Column::Bool(_) => (PhysicalType::BOOLEAN, None),
                Column::U64(_) => {
                    (PhysicalType::INT64, Some(LogicalType::Integer(IntType { bit_width: 64, is_signed: false })))
                }
                Column::I64(_) => (PhysicalType::INT64, None),
                Column::F64(_) => (PhysicalType::DOUBLE, None),
                Column::Str(_) => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
            };
            Type::primitive_type_builder(name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let schema = Arc::new(Type::group_type_builder("meshbed").with_fields(fields).build()?);
    let properties = Arc::new(WriterProperties::builder().set_compression(Compression::SNAPPY).build());
    let file = std::fs::File::create(path)?;
    let mut writer = SerializedFileWriter::new(file, schema, properties)?;
    let mut group = writer.next_row_group()?;
    let levels = |present: Vec<bool>| present.into_iter().map(i16::from).collect::<Vec<i16>>();
    let mut c = 0;
    while let Some(mut column) = group.next_column()? {
        match &table.columns[c] {
            Column::Bool(v) => {
                let l = levels(v.iter().map(Option::is_some).collect());
                let v: Vec<bool> = v.iter().flatten().copied().collect();
                column.typed::<BoolType>().write_batch(&v, Some(&l), None)?;
            }
            Column::U64(v) => {
                let l = levels(v.iter().map(Option::is_some).collect());
                // UINT_64 is stored in INT64's bits.
                let v: Vec<i64> = v.iter().flatten().map(|x| *x as i64).collect();
                column.typed::<Int64Type>().write_batch(&v, Some(&l), None)?;
            }
            Column::I64(v) => {
                let l = levels(v.iter().map(Option::is_some).collect());
                let v: Vec<i64> = v.iter().flatten().copied().collect();
                column.typed::<Int64Type>().write_batch(&v, Some(&l), None)?;
            }
            Column::F64(v) => {
                let l = levels(v.iter().map(Option::is_some).collect());
                let v: Vec<f64> = v.iter().flatten().copied().collect();
                column.typed::<DoubleType>().write_batch(&v, Some(&l), None)?;
            }
            Column::Str(v) => {
                let l = levels(v.iter().map(Option::is_some).collect());
                let v: Vec<ByteArray> = v.iter().flatten().map(|t| ByteArray::from(t.as_bytes().to_vec())).collect();
                column.typed::<ByteArrayType>().write_batch(&v, Some(&l), None)?;
            }
        }
        column.close()?;
        c += 1;
    }
    group.close()?;
    writer.close()?;
    Ok(())
}
