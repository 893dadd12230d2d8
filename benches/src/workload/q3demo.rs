//! A real Quake 3 demo as a workload: every `svc_snapshot` it recorded,
//! reconstructed by the demo reader, with the base the recorded stream
//! deltaed it from and the spawn baselines in force.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fields::{BitSink, BitWriter, HuffmanCode, HuffmanWriter};
use q3::reencode::write_snapshot;
use q3::{Command, Dm68Decoder, EntityState, PlayerState, Snapshot, MAX_MSGLEN};

use super::{ExtraEncoders, RunEnd, TargetSet, Visit, Workload};
use crate::engine::EngineEncoder;
use crate::loo::{q3_engine_encoder, train_without, TrainedModels};
use crate::state::{Reference, State, Step, Zeros};
use crate::Encoder;
use crate::Error;
use fields::model::AdaptPolicy;

/// A snapshot of a Quake 3 demo in the report's terms.
pub type Q3State = State<EntityState, PlayerState>;

/// A step with owned references: what [`Q3Demo::decode`] hands out.
#[derive(Debug, Clone)]
pub struct OwnedStep {
    /// The snapshot.
    pub snapshot: Arc<Q3State>,
    /// Its base (`None`: full).
    pub base: Option<Arc<Q3State>>,
    /// The delta byte as recorded.
    pub delta_num: u8,
    /// The server's frame length (see [`Step::frame_ms`]).
    pub frame_ms: u32,
    /// The spawn baselines in force.
    pub baselines: Arc<q3::Baselines>,
    /// The recorded and re-encoded sizes.
    pub reference: Reference,
}

impl OwnedStep {
    /// The step, borrowed.
    pub fn step(&self) -> Step<'_, EntityState, PlayerState> {
        Step {
            snapshot: &self.snapshot,
            base: self.base.as_ref(),
            delta_num: self.delta_num,
            frame_ms: self.frame_ms,
            baselines: &*self.baselines,
            reference: Some(self.reference),
            stream: 0,
        }
    }
}

/// The report's view of a demo snapshot.
pub fn state_of(snapshot: &Snapshot) -> Q3State {
    State {
        server_time: snapshot.server_time,
        flags: snapshot.snap_flags,
        areamask: snapshot.areamask.clone(),
        player: snapshot.ps,
        entities: snapshot.entities.clone(),
    }
}

/// Greatest common divisor (`gcd(0, b) = b`).
fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Snapshots remembered for base look-ups: twice Quake 3's ring.
const RECENT: usize = 2 * q3::PACKET_BACKUP;

/// A `.dm_68` file.
#[derive(Debug, Clone)]
pub struct Q3Demo {
    path: PathBuf,
    data: Vec<u8>,
    /// The leave-one-out encoders' models (`None`: no leave-one-out).
    loo: Option<LooModels>,
}

/// Where the leave-one-out encoders' models come from.
#[derive(Debug, Clone)]
enum LooModels {
    /// Trained on the training demos in this directory other than the
    /// measured one.
    Train(PathBuf),
    /// Given.
    Given(TrainedModels),
}

impl Q3Demo {
    /// Reads a demo file.
    pub fn open(path: &Path) -> Result<Self, Error> {
        Ok(Q3Demo {
            data: crate::read_file(path)?,
            path: path.to_path_buf(),
            loo: None,
        })
    }

    /// Also measures `native_loo`: models trained on the training demos in
    /// `dir` other than this one, adapting to the stream
    /// ([`AdaptPolicy::DEFAULT`]), and `native_loo_static`: the same
    /// models, fixed.
    pub fn with_leave_one_out(mut self, dir: &Path) -> Self {
        self.loo = Some(LooModels::Train(dir.to_path_buf()));
        self
    }

    /// Measures `native_loo` and `native_loo_static` with `models`
    /// instead of training them (for tests: training takes the whole
    /// training set).
    pub fn with_loo_models(mut self, models: TrainedModels) -> Self {
        self.loo = Some(LooModels::Given(models));
        self
    }

    /// The file name.
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }

    /// The server's frame length: the greatest common divisor of the
    /// demo's steps of server time (Quake 3's `1000 / sv_fps`; 33 ms in
    /// every shared demo). Protocol 68 does not send it, so it is read off
    /// the recording, as a client would from its first snapshots; 1 when
    /// the demo has fewer than two snapshots.
    pub fn frame_ms(&self) -> Result<u32, Error> {
        let mut last = None;
        let mut frame = 0u32;
        for item in Dm68Decoder::new(&self.data)? {
            let Ok(record) = item else { break };
            for command in &record.message.commands {
                if let Command::Snapshot(snap) = &command.command {
                    let time = snap.snapshot.server_time;
                    if let Some(last) = last {
                        frame = gcd(frame, time.wrapping_sub(last).unsigned_abs());
                    }
                    last = Some(time);
                }
            }
        }
        Ok(frame.max(1))
    }

    /// Decodes the demo and hands every snapshot to `f` as an [`OwnedStep`].
    pub fn decode(
        &self,
        mut f: impl FnMut(OwnedStep) -> Result<(), Error>,
    ) -> Result<RunEnd, Error> {
        let frame_ms = self.frame_ms()?;
        let mut recent: VecDeque<(Arc<Snapshot>, Arc<Q3State>)> = VecDeque::with_capacity(RECENT);
        let mut buf = vec![0u8; 2 * MAX_MSGLEN];
        for item in Dm68Decoder::new(&self.data)? {
            let record = match item {
                Ok(record) => record,
                Err(error) => return Ok(RunEnd::Stopped(error.to_string())),
            };
            for command in &record.message.commands {
                let Command::Snapshot(snap) = &command.command else {
                    continue;
                };
                let base = snap.base.as_ref().map(|base| {
                    recent
                        .iter()
                        .find(|(s, _)| Arc::ptr_eq(s, base))
                        .map_or_else(|| Arc::new(state_of(base)), |(_, state)| Arc::clone(state))
                });
                let mut writer = BitWriter::new(&mut buf);
                let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
                write_snapshot(
                    &mut sink,
                    &snap.snapshot,
                    snap.base.as_deref(),
                    &snap.baselines,
                )?;
                let reference = Reference {
                    original_bits: command.bits.len(),
                    reencoded_bits: sink.bits_written(),
                };
                let state = Arc::new(state_of(&snap.snapshot));
                if recent.len() == RECENT {
                    recent.pop_front();
                }
                recent.push_back((Arc::clone(&snap.snapshot), Arc::clone(&state)));
                f(OwnedStep {
                    snapshot: state,
                    base,
                    delta_num: snap.snapshot.delta_num,
                    frame_ms,
                    baselines: Arc::clone(&snap.baselines),
                    reference,
                })?;
            }
        }
        Ok(RunEnd::Complete)
    }

    /// Every step, in memory (for benchmarks). A demo that stops early
    /// yields the steps before the fault.
    pub fn collect(&self) -> Result<Vec<OwnedStep>, Error> {
        let mut steps = Vec::new();
        self.decode(|step| {
            steps.push(step);
            Ok(())
        })?;
        Ok(steps)
    }
}

impl Workload for Q3Demo {
    type Entity = EntityState;
    type Player = PlayerState;

    fn name(&self) -> String {
        self.file_name()
    }

    fn description(&self) -> String {
        format!(
            "real Quake 3 demo {} ({} bytes), recorded delta bases",
            self.file_name(),
            self.data.len()
        )
    }

    fn zeros(&self) -> Zeros<EntityState, PlayerState> {
        Zeros::default()
    }

    fn targets(&self) -> TargetSet {
        TargetSet::SizeAndBits
    }

    fn extra_encoders(&self) -> Result<ExtraEncoders<EntityState, PlayerState>, Error> {
        let adapting = || -> Vec<Box<dyn Encoder<EntityState, PlayerState>>> {
            vec![
                Box::new(EngineEncoder::native_adapting()),
                Box::new(EngineEncoder::native_range()),
                Box::new(EngineEncoder::native_adapting_range()),
            ]
        };
        let adapting_note = "native_adapting: the committed models adapting to the stream \
                             (AdaptPolicy::LIVE); native_range, native_adapting_range: \
                             native and native_adapting range-coded (CompactRange)"
            .to_owned();
        let models = match &self.loo {
            None => {
                return Ok(ExtraEncoders {
                    encoders: adapting(),
                    notes: vec![adapting_note],
                })
            }
            Some(LooModels::Train(dir)) => train_without(dir, &self.path)?,
            Some(LooModels::Given(models)) => models.clone(),
        };
        let policy = AdaptPolicy::DEFAULT;
        let note = format!(
            "native_loo: models trained on {} other demos ({}), not on this one, adapting to \
             the stream as both ends code it (chains of {} messages doubling to {}, a stream \
             symbol worth {} training ones); native_loo_static: the same models, fixed",
            models.trained_on.len(),
            models.trained_on.join(", "),
            policy.chain_at(0),
            policy.chain_length,
            policy.weight
        );
        let mut encoders = adapting();
        encoders.extend([
            Box::new(q3_engine_encoder("native_loo", &models, Some(policy))?)
                as Box<dyn Encoder<EntityState, PlayerState>>,
            Box::new(
                q3_engine_encoder("native_loo", &models, Some(policy))?
                    .framed("native_loo_range", Arc::new(snapshot::CompactRange)),
            ),
            Box::new(q3_engine_encoder("native_loo_static", &models, None)?),
        ]);
        Ok(ExtraEncoders {
            encoders,
            notes: vec![adapting_note, note],
        })
    }

    fn run(&mut self, visit: &mut Visit<'_, EntityState, PlayerState>) -> Result<RunEnd, Error> {
        self.decode(|owned| visit(owned.step()))
    }
}
