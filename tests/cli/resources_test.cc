#include "cli/resources.h"

#include <gtest/gtest.h>

namespace mkube::cli {
namespace {

TEST(ErrorLineTest, TheServersRefusalsInKubectlsWords) {
  struct Case {
    const char* name;
    absl::Status status;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"gRPC's refusal of a request over the apiserver's limit",
       absl::ResourceExhaustedError("Received message larger than max (52428850 vs. 3145728)"),
       "Error from server (RequestEntityTooLarge): Request entity too large: limit is 3145728"},
      {"the same for a manifest",
       absl::ResourceExhaustedError(
           "error when creating \"big.yaml\": Received message larger than max (4194320 vs. "
           "3145728)"),
       "Error from server (RequestEntityTooLarge): error when creating \"big.yaml\": Request "
       "entity too large: limit is 3145728"},
      {"the apiserver's own words for it",
       absl::ResourceExhaustedError("Request entity too large: limit is 3145728"),
       "Error from server (RequestEntityTooLarge): Request entity too large: limit is 3145728"},
      {"too many requests stay so",
       absl::ResourceExhaustedError("Too many requests, please try again later."),
       "Error from server (TooManyRequests): Too many requests, please try again later."},
      {"a 500 without a reason: etcd's refusal passed on",
       absl::UnknownError("etcdserver: request is too large"),
       "Error from server: etcdserver: request is too large"},
      {"invalid objects",
       absl::InvalidArgumentError("Pod \"p\" is invalid: metadata.annotations: Too long: may not "
                                  "be more than 262144 bytes"),
       "Error from server (Invalid): Pod \"p\" is invalid: metadata.annotations: Too long: may "
       "not be more than 262144 bytes"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(ErrorLine(c.status, "127.0.0.1:6443"), c.want) << c.name;
  }
}

}  // namespace
}  // namespace mkube::cli
