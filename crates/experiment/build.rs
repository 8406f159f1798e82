//! Records the git revision meshbed is built from, for the result rows'
//! `git_revision` column (issue 16: "every result row carries the meshbed
//! version and the git revision it was built from, if known"), like SEM's
//! commit pinning. Never fails the build: without git, or outside a
//! repository (a crate tarball), the revision is `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let revision = match git(&["rev-parse", "HEAD"]) {
        Some(head) if !head.is_empty() => {
            // Uncommitted changes to tracked files: the revision alone does
            // not say what was built. Without optional locks: a plain `git
            // status` refreshes and rewrites the index (always, right after
            // a clone), which this script watches, so the next cargo call
            // ran it again and rebuilt this crate and everything above it
            // (a minute of every fresh clone's test command).
            let dirty = git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=MESHBED_GIT_REVISION={revision}");
    // Rerun when HEAD moves (a commit, a checkout) or the index changes (a
    // commit, `git add`); an edit that is not staged does not rerun this
    // script, so `-dirty` is as of the last time it ran.
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]) {
        let git_dir = std::path::PathBuf::from(git_dir);
        // A branch's ref lives in the common directory of a worktree.
        let common = git(&["rev-parse", "--git-common-dir"]).map_or(git_dir.clone(), std::path::PathBuf::from);
        let mut watched = vec![git_dir.join("HEAD"), git_dir.join("index"), common.join("packed-refs")];
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(common.join(reference));
        }
        // Only files that exist: cargo reruns the script on every build
        // for a missing one.
        for file in watched.iter().filter(|f| f.exists()) {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
