// src/ops/common/op_runtime.cpp — see op_runtime.h.
#include "src/ops/common/op_runtime.h"

#include "flux/knobs.h"
#include "src/common/check.h"

namespace flux::ops {

bool stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  FLUX_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

OpRuntime::OpRuntime(Communicator& comm, const std::string& op, const OpRuntimeOptions& options)
    : comm_(&comm), chaos_seed_(static_cast<uint32_t>(knobs::get_int("FLUX_CHAOS_SEED"))) {
  FLUX_CHECK_ARG(comm.device() >= 0, "flux ", op, ": the communicator has no GPU");
  if (comm.world_size() > 1) {  // W = 1 runs the GEMM core alone on every path
    cublas_[0] = std::make_unique<CublasWorkspace>();
    cublas_[1] = std::make_unique<CublasWorkspace>();
    signals_ = std::make_unique<SignalSet>(comm, options.signal_count, op, options.initial_epoch);
    FLUX_CUDA_CHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
    FLUX_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    FLUX_CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
    FLUX_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
}

OpRuntime::~OpRuntime() {
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  if (done_) cudaEventDestroy(done_);
  if (side_) cudaStreamDestroy(side_);
}

void OpRuntime::begin(cudaStream_t stream, const FlagRange* refresh, int refresh_count) {
  comm_->check_fault();
  const bool capturing = stream_is_capturing(stream);
  // Eager calls on another stream than the previous call wait for it (its side-stream reads of the
  // symmetric buffers included: join() made the call's stream wait for them). A captured call cannot
  // wait on an event recorded outside its capture: its replays are ordered by the replay stream.
  if (has_last_ && stream != last_stream_ && !capturing) FLUX_CUDA_CHECK(cudaStreamWaitEvent(stream, done_, 0));
  signals_->barrier_on_stream(stream, refresh, refresh_count);
}

void OpRuntime::fork(cudaStream_t stream) {
  FLUX_CUDA_CHECK(cudaEventRecord(fork_, stream));
  FLUX_CUDA_CHECK(cudaStreamWaitEvent(side_, fork_, 0));
}

void OpRuntime::join(cudaStream_t stream) {
  FLUX_CUDA_CHECK(cudaEventRecord(join_, side_));
  FLUX_CUDA_CHECK(cudaStreamWaitEvent(stream, join_, 0));
}

void OpRuntime::end(cudaStream_t stream) {
  if (stream_is_capturing(stream)) {
    has_last_ = false;  // the next eager call is ordered by its stream (see op_runtime.h)
    return;
  }
  FLUX_CUDA_CHECK(cudaEventRecord(done_, stream));
  last_stream_ = stream;
  has_last_ = true;
}

device::WaitContext OpRuntime::wait_context(int peer) const {
  return device::make_wait_context(comm_->fault_domain(), signals_->wait_timeout_ns(), WaitSite::kSignalWait, peer,
                                   chaos_seed_);
}

void OpRuntime::release() {
  if (signals_) signals_->release();
}

}  // namespace flux::ops
