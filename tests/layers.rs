//! The library's top-level modules form layers: each imports only modules below it, with no
//! import circle. Read from the source: every `crate::module` path, and every root name
//! (`crate::Name`, which `src/lib.rs` re-exports from a module), in a module's files other
//! than its tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module each name the root re-exports comes from (`pub use module::...::Name`).
fn reexports(lib: &syn::File) -> BTreeMap<String, String> {
    fn names(tree: &syn::UseTree, out: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => names(&p.tree, out),
            syn::UseTree::Name(n) => out.push(n.ident.to_string()),
            syn::UseTree::Rename(r) => out.push(r.rename.to_string()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| names(t, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    let mut map = BTreeMap::new();
    for item in &lib.items {
        if let syn::Item::Use(u) = item {
            if let syn::UseTree::Path(p) = &u.tree {
                let mut found = Vec::new();
                names(&p.tree, &mut found);
                for name in found {
                    map.insert(name, p.ident.to_string());
                }
            }
        }
    }
    map
}

/// The source files of top-level module `name` (`name.rs` and everything under `name/`), tests
/// files left out.
fn module_files(name: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let file = src().join(format!("{name}.rs"));
    if file.exists() {
        files.push(file);
    }
    let mut dirs = vec![src().join(name)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && path.file_name().is_some_and(|n| n != "tests.rs")
            {
                files.push(path);
            }
        }
    }
    files
}

/// The code of a file without its inline test module and its comment lines.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("a source file");
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers that follow `crate::` in `code`, including those of a `crate::{...}` group.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for rest in code.split("crate::").skip(1) {
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            out.extend(group.split(',').map(|p| ident(p.trim())));
        } else {
            out.insert(ident(rest));
        }
    }
    out.remove("");
    out
}

/// Module -> the modules it imports.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("src/lib.rs");
    let lib = syn::parse_file(&lib).expect("src/lib.rs parses");
    let roots = reexports(&lib);
    let modules: BTreeSet<String> = lib
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.ident != "test_rng" => Some(m.ident.to_string()),
            _ => None,
        })
        .collect();
    let mut graph = BTreeMap::new();
    for module in &modules {
        let mut deps = BTreeSet::new();
        for file in module_files(module) {
            for name in crate_paths(&code(&file)) {
                let target = roots.get(&name).cloned().unwrap_or(name);
                if modules.contains(&target) && &target != module {
                    deps.insert(target);
                }
            }
        }
        graph.insert(module.clone(), deps);
    }
    graph
}

/// The modules in layers, bottom first, or the modules left on a circle.
fn layers(
    graph: &BTreeMap<String, BTreeSet<String>>,
) -> Result<Vec<Vec<String>>, BTreeSet<String>> {
    let mut placed: BTreeSet<String> = BTreeSet::new();
    let mut layers = Vec::new();
    while placed.len() < graph.len() {
        let layer: Vec<String> = graph
            .iter()
            .filter(|(m, deps)| !placed.contains(*m) && deps.is_subset(&placed))
            .map(|(m, _)| m.clone())
            .collect();
        if layer.is_empty() {
            return Err(graph
                .keys()
                .filter(|m| !placed.contains(*m))
                .cloned()
                .collect());
        }
        placed.extend(layer.iter().cloned());
        layers.push(layer);
    }
    Ok(layers)
}

#[test]
fn the_library_modules_form_layers_without_a_circle() {
    let graph = imports();
    assert!(graph.len() >= 15, "{graph:?}");
    // The reader sees the known edges.
    assert!(graph["writer"].contains("lookup") && graph["app"].contains("writer"));
    match layers(&graph) {
        Ok(layers) => {
            // The application layer is on top; errors at the bottom.
            assert_eq!(layers.last(), Some(&vec!["app".to_string()]));
            assert!(layers[0].contains(&"error".to_string()));
            println!("layers, bottom first: {layers:?}");
        }
        Err(circle) => {
            let edges: Vec<String> = circle
                .iter()
                .map(|m| format!("{m} -> {:?}", graph[m]))
                .collect();
            panic!("an import circle among {circle:?}: {edges:#?}");
        }
    }
}

#[test]
fn a_circle_is_found() {
    let edge = |a: &str, b: &[&str]| (a.to_string(), b.iter().map(|s| s.to_string()).collect());
    let graph: BTreeMap<String, BTreeSet<String>> =
        [edge("a", &[]), edge("b", &["a", "c"]), edge("c", &["b"])]
            .into_iter()
            .collect();
    assert_eq!(
        layers(&graph),
        Err(["b".to_string(), "c".to_string()].into_iter().collect())
    );
    let paths = crate_paths("use crate::error::Error;\nlet x = crate::{Scheme, layout::X};");
    assert_eq!(
        paths,
        ["Scheme", "error", "layout"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}
