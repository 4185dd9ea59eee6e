//! The live progress line on a terminal: pages done, rate, queued, fetching, waiting, errors.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use trawl::Progress;

/// A spinner line redrawn a few times a second until `finish`.
pub struct Display {
    bar: ProgressBar,
    task: tokio::task::JoinHandle<()>,
}

impl Display {
    /// Start drawing `progress` on stderr.
    pub fn start(progress: Progress) -> Display {
        let bar = ProgressBar::new_spinner();
        // No colours or styles in the template: the line redraws with cursor moves only,
        // so it honours NO_COLOR (and needs nothing else to).
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("static template"),
        );
        let b = bar.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let s = progress.snapshot();
                let queued = s.frontier.in_memory as u64 + s.frontier.spilled;
                b.set_message(format!(
                    "{} pages, {:.0}/s, {} queued, {} fetching, {} waiting, {} errors",
                    s.run.pages,
                    s.run.rate(),
                    queued,
                    s.fetching,
                    s.waiting,
                    s.run.failed
                ));
                b.tick();
            }
        });
        Display { bar, task }
    }

    /// Stop drawing and clear the line.
    pub fn finish(self) {
        self.task.abort();
        self.bar.finish_and_clear();
    }
}

/// Without a terminal: a structured log line every `every` until the task is aborted.
pub fn log_every(progress: Progress, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            let s = progress.snapshot();
            tracing::info!(
                pages = s.run.pages,
                rate = format!("{:.1}", s.run.rate()),
                queued = s.frontier.in_memory as u64 + s.frontier.spilled,
                fetching = s.fetching,
                waiting = s.waiting,
                errors = s.run.failed,
                "progress"
            );
        }
    })
}
