// Writes the HDF5 fuzz target's seed corpus: the fuzz model's weights in both Keras layouts,
// each file prefixed with the mode byte hdf5_fuzzer.cpp reads.
//
//   make_hdf5_seeds tests/fuzz/corpus/hdf5
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "tests/fuzz/hdf5_fuzz_model.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_hdf5_seeds DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  auto model = kestrel::fuzz::make_hdf5_fuzz_model();
  // Mode byte: bit 0 picks the Keras 3 layout, bit 1 loading by name.
  const std::pair<const char*, char> seeds[] = {{"keras3.weights.h5", 1}, {"keras2.h5", 0}, {"keras2_by_name.h5", 2}};
  for (const auto& [name, mode] : seeds) {
    const std::filesystem::path file = std::filesystem::temp_directory_path() / name;
    model->save_weights(file.string());
    std::ifstream in(file, std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / name, std::ios::binary) << mode << content;
    std::filesystem::remove(file);
  }
  return 0;
}
