fn main() -> std::process::ExitCode {
    tantivy_simhash::cli::main()
}
