//! `trawl serve`: the crawl's web page for a crawl file, finished or running.

use std::process::ExitCode;

use clap::Args;

use crate::cli::Source;
use crate::exit::exit_for;

/// `trawl serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: Source,
    /// Serve on this address; any but loopback needs --ui-token.
    #[arg(long, value_name = "ADDR", default_value = trawl::ui::DEFAULT_ADDR)]
    pub addr: String,
    /// The token every request must carry: `Authorization: Bearer TOKEN`, or `?token=TOKEN`
    /// in the address (the page passes it on).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "TRAWL_UI_TOKEN",
        hide_env_values = true
    )]
    pub ui_token: Option<String>,
}

pub(crate) fn serve(args: ServeArgs) -> ExitCode {
    exit_for(run(args), |e| {
        let x = e.downcast_ref::<trawl::ui::UiError>()?;
        Some((false, x.is_usage()))
    })
}

fn run(args: ServeArgs) -> anyhow::Result<()> {
    crate::source::only_one(&args.source)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let readable = crate::source::readable(&args.source).await?;
        let sources = trawl::ui::Sources {
            db: Some(readable.path),
            progress: None,
        };
        let token = args.ui_token.clone();
        let bound = trawl::ui::serve(&args.addr, token, sources, std::future::pending()).await?;
        let query = match &args.ui_token {
            Some(_) => "?token=TOKEN",
            None => "",
        };
        println!(
            "trawl: serving {} at http://{bound}/{query} (Ctrl-C stops)",
            args.source.shown()
        );
        // The process ends here; open connections end with it.
        crate::crawl::wait_signal().await;
        Ok(())
    })
}
