//! The README's promises about itself: its title, then the two commands,
//! then the embedding section, whose example is the code of
//! `netq3/examples/embed.rs` (which `cargo test` compiles), in at most 40
//! lines of code.

const README: &str = include_str!("../../README.md");
const EMBED: &str = include_str!("../../netq3/examples/embed.rs");

#[test]
fn the_readme_starts_with_its_title_and_the_two_commands() {
    let first: Vec<&str> = README.lines().take(6).collect();
    assert!(first[0].starts_with("# netq3"), "{}", first[0]);
    assert_eq!(
        first[1..],
        [
            "",
            "```sh",
            "cargo run --release",
            "cargo test --workspace",
            "```"
        ]
    );
}

#[test]
fn the_embedding_section_comes_first() {
    let sections: Vec<&str> = README.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        sections.first(),
        Some(&"## Embedding the library in a game loop")
    );
    assert!(README.contains("session/examples/udp.rs"));
}

#[test]
fn the_readme_example_is_the_compiled_one() {
    let excerpt = EMBED
        .split("// README:begin\n")
        .nth(1)
        .and_then(|rest| rest.split("// README:end").next())
        .expect("markers in netq3/examples/embed.rs");
    assert!(excerpt.lines().count() >= 15, "an excerpt worth showing");
    assert!(
        README.contains(excerpt.trim_end()),
        "README.md must show netq3/examples/embed.rs between its README markers verbatim"
    );
    // The whole example, not only the excerpt: a server and a client in one
    // loop in at most 40 lines of code (blank lines and comments not counted).
    let code = EMBED
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count();
    assert!(code <= 40, "{code} lines of code");
    assert!(README.contains("## Benchmarks"));
}
