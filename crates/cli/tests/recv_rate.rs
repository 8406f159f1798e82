//! `meshbed recv --rate`: a bad value is refused before anything listens,
//! naming the option, the value and what is expected.

use std::process::Command;

#[test]
fn a_bad_rate_names_the_option_the_value_and_the_form() {
    let o = Command::new(env!("CARGO_BIN_EXE_meshbed"))
        .args(["recv", "--listen", "127.0.0.1:0", "--rate", "lots"])
        .output()
        .expect("run meshbed");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--rate") && err.contains("lots") && err.contains("bits per second"), "{err}");
    let help = Command::new(env!("CARGO_BIN_EXE_meshbed")).args(["recv", "--help"]).output().expect("run meshbed");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--rate <LIMIT>") && help.contains("1.5M"), "{help}");
}
