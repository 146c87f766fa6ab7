//! The two server-side scripts (`admit.lua`, `charge.lua`), their
//! arguments and their answers.

use std::time::Duration;

use redis::{Script, ScriptInvocation, aio::MultiplexedConnection};

use super::keys::BucketSpec;

/// What `admit.lua` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every bucket consumed; per bucket, in order: the remaining burst of
    /// a rate bucket, the balance after the reservation of a token bucket.
    Admitted(Vec<i64>),
    /// Nothing consumed: bucket `index` refused, and no request can pass
    /// every bucket before `wait`.
    Refused { index: usize, wait: Duration },
    /// Nothing consumed: the script ran after the caller's deadline (the
    /// caller had given up on the answer).
    Late,
}

/// The scripts, hashed once.
pub(super) struct Scripts {
    admit: Script,
    charge: Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            admit: Script::new(include_str!("admit.lua")),
            charge: Script::new(include_str!("charge.lua")),
        }
    }

    /// Load both scripts on a new connection, so the first calls need one
    /// round trip (a server that lost them later gets them again on use).
    pub(super) async fn load(&self, conn: &mut MultiplexedConnection) -> redis::RedisResult<()> {
        self.admit.load_async(conn).await?;
        self.charge.load_async(conn).await?;
        Ok(())
    }

    /// `deadline_us`: the caller's deadline on the server's clock (0:
    /// none).
    pub(super) fn admit(
        &self,
        buckets: &[BucketSpec],
        reserve: u64,
        deadline_us: i64,
    ) -> ScriptInvocation<'_> {
        let mut inv = self.admit.prepare_invoke();
        inv.arg(deadline_us);
        for b in buckets {
            inv.key(b.key());
            match b {
                BucketSpec::Rate {
                    interval_us, burst, ..
                } => inv.arg("r").arg(*interval_us).arg(*burst),
                BucketSpec::Tokens { per_minute, .. } => inv.arg("t").arg(*per_minute).arg(reserve),
            };
        }
        inv
    }

    pub(super) fn charge(&self, buckets: &[(String, u64)], amount: i64) -> ScriptInvocation<'_> {
        let mut inv = self.charge.prepare_invoke();
        inv.arg(amount);
        for (key, per_minute) in buckets {
            inv.key(key).arg(*per_minute);
        }
        inv
    }
}

/// Read `admit.lua`'s answer for `n` buckets.
pub(super) fn verdict(raw: &[i64], n: usize) -> Result<Verdict, String> {
    match raw {
        [1, values @ ..] if values.len() == n => Ok(Verdict::Admitted(values.to_vec())),
        [2] => Ok(Verdict::Late),
        [0, index, wait_us] if *index >= 1 && (*index as usize) <= n => Ok(Verdict::Refused {
            index: *index as usize - 1,
            wait: Duration::from_micros((*wait_us).max(0) as u64),
        }),
        _ => Err(format!("unexpected answer from admit.lua: {raw:?}")),
    }
}
