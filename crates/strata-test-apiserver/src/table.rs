//! Table output, as `kubectl get` asks for it (`Accept: …;as=Table;g=meta.k8s.io`):
//! the CRD's `additionalPrinterColumns` evaluated on each object, so the sandbox
//! shows `AVAILABLE`, `VERSION` and the rest, as a real API server does.
//!
//! Only kinds registered from a CRD with printer columns answer with a table; every
//! other kind answers with its objects, and kubectl prints its default `NAME` and
//! `AGE`. Watches always stream objects.

use jiff::Timestamp;
use jsonpath_rust::JsonPath;
use serde_json::{Value, json};

use crate::kinds::{PrinterColumn, ResourceInfo};
use crate::object::partial_metadata;

/// Whether `info` answers table requests.
pub(crate) fn serves_tables(info: &ResourceInfo) -> bool {
    !info.printer_columns.is_empty()
}

/// The `meta.k8s.io/v1` Table of `objects`: a `Name` column, then the printer
/// columns; each row carries the object's metadata, as `includeObject=Metadata`.
pub(crate) fn table(
    info: &ResourceInfo,
    objects: &[&Value],
    metadata: Value,
    now: Timestamp,
) -> Value {
    let mut columns = vec![json!({
        "name": "Name", "type": "string", "format": "name", "priority": 0,
        "description": "Name must be unique within a namespace."
    })];
    columns.extend(info.printer_columns.iter().map(|column| {
        json!({
            "name": column.name, "type": column.type_, "format": "",
            "priority": column.priority, "description": column.description
        })
    }));
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let mut cells = vec![object["metadata"]["name"].clone()];
            cells.extend(
                info.printer_columns
                    .iter()
                    .map(|column| cell(object, column, now)),
            );
            json!({"cells": cells, "object": partial_metadata(object)})
        })
        .collect();
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "Table",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// One cell: the column's JSONPath on `object` (Kubernetes writes it without the
/// leading `$`). A path that finds nothing is an empty cell; several values, or an
/// array, are joined with commas; a `date` is shown as its age.
fn cell(object: &Value, column: &PrinterColumn, now: Timestamp) -> Value {
    let path = format!("${}", column.json_path);
    let found: Vec<&Value> = object.query(&path).unwrap_or_default();
    let texts: Vec<String> = found
        .iter()
        .flat_map(|value| match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![*other],
        })
        .filter_map(|value| match value {
            Value::String(text) => Some(text.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
        .collect();
    if texts.is_empty() {
        return Value::Null;
    }
    if column.type_ == "date" {
        return texts[0].parse::<Timestamp>().map_or(Value::Null, |then| {
            json!(human_duration(now.duration_since(then).as_secs()))
        });
    }
    json!(texts.join(","))
}

/// An age the way kubectl prints it: `45s`, `3m20s`, `2h`, `5d`, `2y`.
fn human_duration(seconds: i64) -> String {
    if seconds < 0 {
        return "0s".to_owned();
    }
    let minutes = seconds / 60;
    let hours = minutes / 60;
    let days = hours / 24;
    let years = days / 365;
    let with_rest = |big: i64, big_unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    match () {
        () if seconds < 120 => format!("{seconds}s"),
        () if minutes < 10 => with_rest(minutes, "m", seconds % 60, "s"),
        () if minutes < 180 => format!("{minutes}m"),
        () if hours < 8 => with_rest(hours, "h", minutes % 60, "m"),
        () if hours < 48 => format!("{hours}h"),
        () if hours < 24 * 8 => with_rest(days, "d", hours % 24, "h"),
        () if days < 365 * 2 => format!("{days}d"),
        () if years < 8 => with_rest(years, "y", days % 365, "d"),
        () => format!("{years}y"),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn column(name: &str, type_: &str, json_path: &str) -> PrinterColumn {
        PrinterColumn {
            name: name.to_owned(),
            type_: type_.to_owned(),
            json_path: json_path.to_owned(),
            description: String::new(),
            priority: 0,
        }
    }

    fn cluster() -> Value {
        json!({
            "metadata": {"name": "simple-trino", "namespace": "default",
                         "creationTimestamp": "2026-11-25T10:00:00Z"},
            "status": {
                "conditions": [
                    {"type": "Available", "status": "True"},
                    {"type": "Degraded", "status": "False"}
                ],
                "deployedProductVersion": "483",
                "catalogs": ["postgres", "tpch"]
            }
        })
    }

    #[rstest]
    #[case::condition_by_type("string", r#".status.conditions[?(@.type=="Degraded")].status"#, json!("False"))]
    #[case::plain_field("string", ".status.deployedProductVersion", json!("483"))]
    #[case::array_joined("string", ".status.catalogs", json!("postgres,tpch"))]
    #[case::missing_is_empty("string", ".status.clusterId", Value::Null)]
    #[case::date_as_age("date", ".metadata.creationTimestamp", json!("125m"))]
    fn cells_follow_the_printer_columns(
        #[case] type_: &str,
        #[case] path: &str,
        #[case] expected: Value,
    ) {
        let now: Timestamp = "2026-11-25T12:05:00Z"
            .parse()
            .unwrap_or_else(|_| unreachable!());
        assert_eq!(cell(&cluster(), &column("c", type_, path), now), expected);
    }

    #[rstest]
    #[case::seconds(45, "45s")]
    #[case::minutes_and_seconds(200, "3m20s")]
    #[case::whole_minutes(600, "10m")]
    #[case::hours_and_minutes(3 * 3600 + 60, "3h1m")]
    #[case::hours(30 * 3600, "30h")]
    #[case::days_and_hours(3 * 86400 + 3600, "3d1h")]
    #[case::days(100 * 86400, "100d")]
    #[case::years_and_days(3 * 365 * 86400 + 86400, "3y1d")]
    fn ages_read_like_kubectl(#[case] seconds: i64, #[case] expected: &str) {
        assert_eq!(human_duration(seconds), expected);
    }

    #[test]
    fn a_table_has_a_name_column_and_a_row_per_object() {
        let info = ResourceInfo::new(
            "trino.strata.dev",
            "v1alpha1",
            "TrinoCluster",
            "trinoclusters",
        )
        .with_printer_columns(vec![column(
            "Available",
            "string",
            r#".status.conditions[?(@.type=="Available")].status"#,
        )]);
        let object = cluster();
        let table = table(&info, &[&object], json!({}), Timestamp::now());
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["columnDefinitions"][0]["name"], "Name");
        assert_eq!(table["columnDefinitions"][1]["name"], "Available");
        assert_eq!(table["rows"][0]["cells"], json!(["simple-trino", "True"]));
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    }
}
