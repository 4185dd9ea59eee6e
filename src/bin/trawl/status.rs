//! `trawl status`: whether a crawl is running and how far it got.

use std::io::Write;
use std::process::ExitCode;

use crate::cli::{StatusArgs, StatusFormat};
use crate::exit::{fail, with_causes, BAD_INPUT, FAILED, SUCCESS};
use crate::status_view;

pub(crate) fn status(args: StatusArgs) -> ExitCode {
    if let Err(e) = crate::source::only_one(&args.source) {
        return fail(BAD_INPUT, e);
    }
    if let (Some(store), Some(id)) = (&args.source.store, &args.source.crawl_id) {
        if args.generation.generation.is_some() {
            return fail(
                BAD_INPUT,
                "--generation reads a SQLite file's generations; give --db FILE (a Redis \
                 crawl's status is its current run)",
            );
        }
        return redis_status(store, id, args.format);
    }
    let Some(db) = &args.source.db else {
        return fail(
            BAD_INPUT,
            "give --db FILE, or --store URL with --crawl-id NAME",
        );
    };
    let s = match trawl::status::read_generation(db, args.generation.generation) {
        Ok(s) => s,
        Err(e) => {
            let usage = e.is_usage();
            return fail(if usage { BAD_INPUT } else { FAILED }, e);
        }
    };
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        StatusFormat::Text => status_view::text(&s, &mut out),
        StatusFormat::Json => status_view::json(&s, &mut out),
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(FAILED, e),
        _ => ExitCode::from(SUCCESS),
    }
}

pub(crate) fn redis_status(store: &str, id: &str, format: StatusFormat) -> ExitCode {
    let read = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| Ok(rt.block_on(trawl::store::redis::status::read(store, id))?));
    let s = match read {
        Ok(s) => s,
        Err(e) => {
            let usage = e
                .downcast_ref::<trawl::store::redis::DistError>()
                .is_some_and(|d| d.is_usage());
            return fail(if usage { BAD_INPUT } else { FAILED }, with_causes(&e));
        }
    };
    let mut out = std::io::stdout().lock();
    let written = match format {
        StatusFormat::Json => serde_json::to_writer_pretty(&mut out, &s)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out)),
        StatusFormat::Text => status_view::redis_text(&s, &mut out),
    };
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => fail(FAILED, e),
        _ => ExitCode::from(SUCCESS),
    }
}
