// Benchmark peer: a plain prometheus-cpp Exposer + Registry holding the same gauges as a
// schedwatch exposition file (so the exporter's pre-rendered bytes can be compared with the
// obvious alternative). Usage: promcpp_peer METRICS_FILE PORT
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: promcpp_peer METRICS_FILE PORT\n";
    return 2;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> families;
  std::ifstream in(argv[1]);
  std::string line;
  std::size_t series = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // name{a="x",b="y"} value -- the label values in the benchmark hold no quotes or commas.
    auto brace = line.find('{');
    auto space = line.rfind(' ');
    std::string name = line.substr(0, brace == std::string::npos ? space : brace);
    prometheus::Labels labels;
    if (brace != std::string::npos) {
      std::string body = line.substr(brace + 1, line.rfind('}') - brace - 1);
      std::size_t start = 0;
      while (start < body.size()) {
        auto equals = body.find('=', start);
        auto close = body.find('"', equals + 2);
        labels[body.substr(start, equals - start)] = body.substr(equals + 2, close - equals - 2);
        start = close + 2;
      }
    }
    auto& family = families[name];
    if (family == nullptr) {
      family = &prometheus::BuildGauge().Name(name).Help("peer").Register(*registry);
    }
    family->Add(labels).Set(std::stod(line.substr(space + 1)));
    ++series;
  }
  prometheus::Exposer exposer{std::string("127.0.0.1:") + argv[2]};
  exposer.RegisterCollectable(registry);
  std::cerr << "serving " << series << " series" << std::endl;
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
