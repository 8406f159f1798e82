//! [`Protocol`] as files and command lines spell it: serde and (with the
//! `clap` feature) clap read and write the scenario names of
//! [`Protocol::name`], the one list of names, so that scenarios, results,
//! the CLI and Python share them and a misspelling is refused with the list.

use crate::engine::Protocol;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

impl Serialize for Protocol {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Protocol {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(|_| {
            let names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&name),
                &format!("one of {}", names.join(", ")).as_str(),
            )
        })
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for Protocol {
    fn value_variants<'a>() -> &'a [Self] {
        &Protocol::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    struct Flow {
        protocol: Protocol,
    }

    #[test]
    fn every_protocol_reads_back_as_its_scenario_name() {
        for p in Protocol::ALL {
            let v = serde_json::to_value(Flow { protocol: p }).unwrap();
            assert_eq!(v["protocol"], p.name());
            assert_eq!(serde_json::from_value::<Flow>(v).unwrap().protocol, p);
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_list() {
        let e = serde_json::from_str::<Flow>(r#"{"protocol": "tcp-vegas"}"#).unwrap_err().to_string();
        assert!(e.starts_with("invalid value: string \"tcp-vegas\", expected one of atp-default, "), "{e}");
        assert!(e.contains("mtl"), "{e}");
    }
}
