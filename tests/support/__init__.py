"""What the test modules share, so that no test module imports another: where the project and the shared data sets
are (`data`), data written for tests (`corpora`: small qa-spans folders and documents; `pdfs`, `docx_files`,
`archives`: real files built by hand), stand-ins for model services (`fakes`), the span checks every chunker is held
to (`spans`), the steps of an app session through AppTest (`appflow`) and in a browser (`browser`), the command line
as a child process (`cli`), and the servers the integration tests start (`chroma_server`, `llm_server`,
`rerank_server`; `http_json` for the small recording servers). The fault server and the other launchers shared with
the benchmarks live in bench.local_servers."""
