// Kubeconfig text, with its current context and with a named one, and base64 decoding.
#include "fuzz/fuzz_util.h"
#include "sources/kubernetes/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch::kubernetes;
  std::string_view text = schedwatch::fuzz::AsText(data, size);
  // Relative paths resolve against a directory that does not exist: nothing is read.
  ParseKubeconfig(text, "/nonexistent/fuzz/kubeconfig", "");
  ParseKubeconfig(text, "/nonexistent/fuzz/kubeconfig", "prod");
  DecodeBase64(text);
  return 0;
}
