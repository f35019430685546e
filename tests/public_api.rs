//! The public names of the crate root and of its one public module (`app`) against the
//! checked-in list `tests/public_api.txt`, so that a change to the public API is deliberate: it
//! changes the list in the same commit.
//!
//! The names are read from `src/lib.rs` as Rust source (syn): every `pub` item at the root,
//! modules as `mod name`, the names a `pub use` brings in (renamed ones by their new name).

use std::collections::BTreeSet;

fn used_names(tree: &syn::UseTree, out: &mut BTreeSet<String>) {
    match tree {
        syn::UseTree::Path(p) => used_names(&p.tree, out),
        syn::UseTree::Name(n) => {
            out.insert(n.ident.to_string());
        }
        syn::UseTree::Rename(r) => {
            out.insert(r.rename.to_string());
        }
        // A glob would make the list say nothing: it is listed as such, to be refused.
        syn::UseTree::Glob(_) => {
            out.insert("*".into());
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                used_names(t, out);
            }
        }
    }
}

/// The public names of the root module `file`.
fn root_names(file: &syn::File) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for item in &file.items {
        let (vis, name) = match item {
            syn::Item::Use(u) => {
                if matches!(u.vis, syn::Visibility::Public(_)) {
                    used_names(&u.tree, &mut names);
                }
                continue;
            }
            syn::Item::Mod(m) => (&m.vis, format!("mod {}", m.ident)),
            syn::Item::Fn(f) => (&f.vis, f.sig.ident.to_string()),
            syn::Item::Struct(s) => (&s.vis, s.ident.to_string()),
            syn::Item::Enum(e) => (&e.vis, e.ident.to_string()),
            syn::Item::Trait(t) => (&t.vis, t.ident.to_string()),
            syn::Item::Type(t) => (&t.vis, t.ident.to_string()),
            syn::Item::Const(c) => (&c.vis, c.ident.to_string()),
            syn::Item::Static(s) => (&s.vis, s.ident.to_string()),
            _ => continue,
        };
        if matches!(vis, syn::Visibility::Public(_)) {
            names.insert(name);
        }
    }
    names
}

/// The public names `file` (a module's source, relative to the package) declares, against the
/// lines of tests/public_api.txt that start with `prefix` (the prefix taken off).
fn check_listed(file: &str, prefix: &str) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let source = std::fs::read_to_string(format!("{dir}/{file}")).expect("the module's source");
    let names = root_names(&syn::parse_file(&source).expect("the module parses"));
    let listed: BTreeSet<String> = std::fs::read_to_string(format!("{dir}/tests/public_api.txt"))
        .expect("tests/public_api.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| match prefix {
            "" => (!l.contains("::")).then_some(l),
            _ => l.strip_prefix(prefix),
        })
        .map(str::to_string)
        .collect();
    let added: Vec<&String> = names.difference(&listed).collect();
    let removed: Vec<&String> = listed.difference(&names).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "the public names of {file} changed: new {added:?}, gone {removed:?}; when that is \
         meant, update tests/public_api.txt in the same commit"
    );
}

#[test]
fn the_root_exports_exactly_the_listed_names() {
    check_listed("src/lib.rs", "");
}

/// The application layer the command line and the Python package share is the one public
/// module: its names are listed too (as `app::NAME`).
#[test]
fn the_app_module_exports_exactly_the_listed_names() {
    check_listed("src/app/mod.rs", "app::");
}

#[test]
fn the_reader_sees_every_kind_of_public_item() {
    let file = syn::parse_file(
        "pub mod a; mod b; pub use x::{C, d::E as F, G}; pub(crate) use y::H; pub fn i() {} \
         pub struct J; struct K; pub const L: u8 = 0; pub trait M {} pub type N = u8;",
    )
    .expect("parses");
    let names: Vec<String> = root_names(&file).into_iter().collect();
    assert_eq!(names, ["C", "F", "G", "J", "L", "M", "N", "i", "mod a"]);
}
