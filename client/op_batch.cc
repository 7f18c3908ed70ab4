#include "client/op_batch.h"

namespace acl_client {

OpBatch::OpBatch() : first_block_(new char[kFirstBlockBytes]) {
  google::protobuf::ArenaOptions options;
  options.initial_block = first_block_.get();
  options.initial_block_size = kFirstBlockBytes;
  arena_ = std::make_unique<google::protobuf::Arena>(options);
  Clear();
}

void OpBatch::Add(absl::FunctionRef<void(acl::v1::AsyncOp&)> build, size_t payload_bytes) {
  build(*message_->mutable_async_batch()->add_ops());
  payload_bytes_ += payload_bytes;
}

void OpBatch::Clear() {
  arena_->Reset();
  message_ = google::protobuf::Arena::CreateMessage<acl::v1::ClientMessage>(arena_.get());
  message_->mutable_async_batch();
  payload_bytes_ = 0;
}

}  // namespace acl_client
