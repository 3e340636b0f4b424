//! `weir new NAME`: a ready Cargo project with a Weir job, its test, and
//! how to run it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};

/// The project's files: path inside it, and the template.
const FILES: [(&str, &str); 4] = [
    ("Cargo.toml", include_str!("../template/Cargo.toml.in")),
    ("src/lib.rs", include_str!("../template/src/lib.rs.in")),
    ("src/main.rs", include_str!("../template/src/main.rs.in")),
    ("tests/job.rs", include_str!("../template/tests/job.rs.in")),
];

/// The `weir` library crate of the source tree this command was built
/// from, if it is still there.
fn default_weir_path() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../weir");
    path.join("Cargo.toml")
        .is_file()
        .then(|| std::fs::canonicalize(&path).unwrap_or(path))
}

/// Whether `name` can be a Cargo package name (and a directory name).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Writes the project `name` into `dir/name`, its `weir` dependency a path
/// to `weir_path` (default: the source tree this command came from).
pub(crate) fn create(
    name: &str,
    dir: &Path,
    weir_path: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if !valid_name(name) {
        bail!(
            "'{name}' cannot name a project: start with a letter, then letters, digits, \
             '-' or '_'"
        );
    }
    let Some(weir_path) = weir_path.or_else(default_weir_path) else {
        bail!(
            "where is Weir's source? this weir was built from a tree that is gone; pass \
             --weir-path PATH/TO/weir/crates/weir"
        );
    };
    let weir_path = std::path::absolute(&weir_path).unwrap_or(weir_path);
    if !weir_path.join("Cargo.toml").is_file() {
        bail!(
            "--weir-path {}: no Cargo.toml there (expected the weir crate: crates/weir)",
            weir_path.display()
        );
    }
    let root = dir.join(name);
    if root.exists() {
        bail!("{} exists already", root.display());
    }
    let crate_name = name.replace('-', "_");
    for (path, template) in FILES {
        let text = template
            .replace("{{name}}", name)
            .replace("{{crate}}", &crate_name)
            .replace("{{weir_path}}", &weir_path.display().to_string());
        let file = root.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    }
    println!(
        "Created {} (a word count job and its test).",
        root.display()
    );
    println!();
    println!("  cd {}", root.display());
    println!("  cargo test                                  # the job's test");
    println!("  echo 'to be or not to be' > words.txt");
    println!("  cargo run -- --input words.txt              # prints (to,1) ... (be,2)");
    println!(
        "  cargo build && weir run target/debug/{name} --input words.txt   # with its REST API"
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::valid_name;

    #[test]
    fn names_are_cargo_package_names() {
        assert!(valid_name("my-job_2"));
        assert!(!valid_name("2job"));
        assert!(!valid_name("my job"));
        assert!(!valid_name("../escape"));
        assert!(!valid_name(""));
    }
}
