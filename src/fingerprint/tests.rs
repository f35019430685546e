use super::*;

#[test]
fn default_scheme_builds() {
    assert!(SchemeBuilder::default().build().is_ok());
}

#[test]
fn golden_print() {
    let s = Scheme::default();
    for t in [
        "hello world",
        "The quick brown fox jumps over the lazy dog",
        "我们在北京大学学习中文和计算机科学",
    ] {
        println!("{:?} {}", t, s.fingerprint_details(t).fingerprint);
    }
}
