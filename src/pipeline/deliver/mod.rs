//! Stage 9: a job's answer delivered as the client asked: whole, held and
//! sent as chunks, or streamed ([`pass`]: as it comes, validated at the
//! end; [`think`]: emulated thinking as it comes; [`tools`]: tool calls
//! extracted as they complete; [`whole`]: a stream that goes out whole
//! after all).

pub(crate) mod pass;
pub(crate) mod think;
pub(crate) mod tools;
mod whole;

use crate::error::ProxyError;

use super::{
    chunk::chunks_of,
    job::{Delivery, Job},
    output::{self, Output},
};

/// Run `job` and produce its output.
pub(crate) async fn run(job: Job, delivery: Delivery) -> Result<Output, ProxyError> {
    match delivery {
        Delivery::Whole => {
            let (value, report) = job.complete(None).await?;
            Ok(Output::Full {
                value,
                headers: report.headers(),
            })
        }
        Delivery::Buffered => {
            let (value, report) = job.complete(None).await?;
            let route = job.route;
            Ok(output::stream(report.headers(), |tx| async move {
                for chunk in chunks_of(route, &value) {
                    if !output::send(&tx, Ok(chunk)).await {
                        return;
                    }
                }
            }))
        }
        Delivery::Pass => pass::run(job).await,
        Delivery::Tools => tools::run(job).await,
        Delivery::Think => think::run(job).await,
    }
}
