//! The driver example of docs/architecture.md ("Writing a driver") compiles and runs, and the
//! page shows exactly this code.

mod example {
    include!("../../../docs/examples/minimal_driver.rs");

    pub fn run() -> ssdlab::Result<()> {
        main()
    }
}

#[test]
fn the_documented_driver_runs() {
    example::run().unwrap();
}

#[test]
fn the_page_shows_the_tested_code() {
    let code = include_str!("../../../docs/examples/minimal_driver.rs");
    let page = include_str!("../../../docs/architecture.md");
    assert!(
        page.contains(code),
        "docs/architecture.md must contain docs/examples/minimal_driver.rs verbatim in its driver section"
    );
}
