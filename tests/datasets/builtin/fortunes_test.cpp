#include "datasets/builtin/fortunes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "framework/core/error.h"

namespace kestrel::datasets {
namespace {

namespace fs = std::filesystem;

bool packages_installed() {
  return fs::exists(fs::path(fortunes::kDefaultDirectory) / "de") &&
         fs::exists(fs::path(fortunes::kDefaultDirectory) / "chinese");
}

#define SKIP_WITHOUT_PACKAGES()                                                   \
  if (!packages_installed()) {                                                    \
    GTEST_SKIP() << "the fortunes-* packages are not installed (bash .ci/setup)"; \
  }

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? c : c & (0x7f >> n);
    for (int k = 1; k < n; ++k) {
      const auto t = static_cast<unsigned char>(s[i + k]);
      if ((t & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (t & 0x3f);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) return false;
    i += n;
  }
  return true;
}

std::int64_t code_points(const std::string& s) {
  std::int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

std::map<std::string, std::int64_t> count_by_language(const fortunes::LanguageId& data) {
  std::map<std::string, std::int64_t> counts;
  for (const fortunes::Split* split : {&data.train, &data.validation, &data.test}) {
    for (std::int64_t label : split->labels.to_vector<std::int64_t>()) counts[data.languages.at(label)] += 1;
  }
  return counts;
}

TEST(Fortunes, LoadsTwelveLanguagesOfCleanUtf8) {
  SKIP_WITHOUT_PACKAGES();
  auto data = fortunes::load_language_id();
  ASSERT_EQ(data.languages.size(), 12u);
  auto counts = count_by_language(data);
  std::cout << "fortunes per language (train+validation+test):";
  for (const char* language : fortunes::kLanguages) std::cout << " " << language << "=" << counts[language];
  std::cout << "\nsplits: train " << data.train.size() << ", validation " << data.validation.size() << ", test "
            << data.test.size() << "\n";
  for (const char* language : fortunes::kLanguages) {
    EXPECT_GE(counts[language], 100) << language;
    EXPECT_LE(counts[language], 2000) << language;
  }
  for (const fortunes::Split* split : {&data.train, &data.validation, &data.test}) {
    ASSERT_EQ(split->labels.shape(), (Shape{split->size()}));
    EXPECT_EQ(split->labels.dtype(), DType::int64);
    for (std::int64_t label : split->labels.to_vector<std::int64_t>()) {
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 12);
    }
    for (const std::string& text : split->texts) {
      ASSERT_TRUE(valid_utf8(text)) << text;
      EXPECT_GE(code_points(text), 10) << text;
      EXPECT_LE(code_points(text), 400) << text;
      EXPECT_EQ(text.find_first_of("\n\t\r\x1b"), std::string::npos) << text;
      EXPECT_NE(text.front(), ' ');
      EXPECT_NE(text.back(), ' ');
    }
  }
  // About 80/10/10.
  const double n = static_cast<double>(data.train.size() + data.validation.size() + data.test.size());
  EXPECT_NEAR(data.train.size() / n, 0.8, 0.02);
  EXPECT_NEAR(data.validation.size() / n, 0.1, 0.02);
}

TEST(Fortunes, SplitsAreDisjointDeterministicAndIndependentOfTheSeed) {
  SKIP_WITHOUT_PACKAGES();
  // Two of the smaller corpora: the splits are made per language, and LoadsTwelveLanguagesOfCleanUtf8
  // reads them all.
  const std::vector<std::string> languages{"eo", "bg"};
  auto a = fortunes::load_language_id({.max_per_language = 300, .languages = languages});
  auto b = fortunes::load_language_id({.max_per_language = 300, .languages = languages});
  EXPECT_EQ(a.train.texts, b.train.texts);
  EXPECT_EQ(a.test.texts, b.test.texts);
  EXPECT_EQ(a.train.labels.to_vector<std::int64_t>(), b.train.labels.to_vector<std::int64_t>());

  std::set<std::string> train(a.train.texts.begin(), a.train.texts.end());
  std::set<std::string> validation(a.validation.texts.begin(), a.validation.texts.end());
  std::set<std::string> test(a.test.texts.begin(), a.test.texts.end());
  EXPECT_EQ(train.size(), a.train.texts.size()) << "duplicates within train";
  for (const std::string& t : validation) EXPECT_FALSE(train.count(t)) << t;
  for (const std::string& t : test) EXPECT_FALSE(train.count(t) || validation.count(t)) << t;

  // Another seed samples and orders differently, but never moves a text to another split.
  auto c = fortunes::load_language_id({.max_per_language = 300, .seed = 7, .languages = languages});
  EXPECT_NE(c.train.texts, a.train.texts);
  for (const std::string& t : c.train.texts) EXPECT_FALSE(validation.count(t) || test.count(t)) << t;
  for (const std::string& t : c.test.texts) EXPECT_FALSE(train.count(t) || validation.count(t)) << t;
}

TEST(Fortunes, CapAndLanguageSubset) {
  SKIP_WITHOUT_PACKAGES();
  auto data = fortunes::load_language_id({.max_per_language = 50, .languages = {"zh", "ga"}});
  EXPECT_EQ(data.languages, (std::vector<std::string>{"zh", "ga"}));
  auto counts = count_by_language(data);
  EXPECT_EQ(counts["zh"], 50);
  EXPECT_EQ(counts["ga"], 50);
}

TEST(Fortunes, ToDatasetYieldsTextAndLabel) {
  SKIP_WITHOUT_PACKAGES();
  auto data = fortunes::load_language_id({.max_per_language = 20, .languages = {"eo", "bg"}});
  data::Dataset ds = data.validation.to_dataset();
  EXPECT_EQ(ds.cardinality(), data.validation.size());
  auto spec = ds.element_spec();
  EXPECT_TRUE(spec.at("text").is_string);
  EXPECT_EQ(spec.at("labels").dtype, DType::int64);
  auto first = ds.take(1).to_vector().at(0);
  EXPECT_EQ(first.strings("text").scalar(), data.validation.texts[0]);
  EXPECT_EQ(first.tensor("labels").item(), data.validation.labels.to_vector<std::int64_t>()[0]);
}

TEST(Fortunes, EnglishCorpus) {
  SKIP_WITHOUT_PACKAGES();
  auto corpus = fortunes::load_english_corpus();
  EXPECT_GT(corpus.size(), 5000u);
  EXPECT_EQ(corpus, fortunes::load_english_corpus());
  std::set<std::string> unique(corpus.begin(), corpus.end());
  EXPECT_EQ(unique.size(), corpus.size());
  for (const std::string& text : corpus) ASSERT_TRUE(valid_utf8(text)) << text;
}

class FakeFortunes : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kestrel_fortunes_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& relative, const std::string& content) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative, std::ios::binary) << content;
  }
  fs::path root_;
};

TEST_F(FakeFortunes, MissingPackageSaysWhatToInstall) {
  try {
    fortunes::load_language_id({.directory = root_.string()});
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("apt-get install fortunes"), std::string::npos) << e.what();
  }
  write("eo/proverbaro", "Sola vojo libera al la fundo rivera\n");
  try {
    fortunes::load_language_id({.directory = root_.string(), .languages = {"eo", "zh"}});
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("fortunes-zh"), std::string::npos) << e.what();
  }
}

TEST_F(FakeFortunes, ParsesCleansAndDeduplicates) {
  write("eo/proverbaro",
        "Estu  sinjoro\tde via vorto\r\n%\r\n"                   // CRLF, tabs and double spaces
        "Ne ĉiu nubo\nalportas pluvon.\n\t\t-- proverbo\n%  \n"  // an attribution, "%" with blanks
        "\x1b[32mĈiu medalo\x1b[m du flankojn posedas\n%\n"      // colour codes
        "Estu sinjoro de via vorto\n%\n"                         // a duplicate after cleaning
        "Bad \xff byte here\n%\n"                                // not UTF-8: skipped
        "Mi\n%\n"                                                // too short
        "Ĉi tiu teksto estas ankaŭ en la irlanda dosiero\n");
  write("eo/proverbaro.dat", "binary index");
  write("eo/off/rot13", "Fbyn ibwb yvoren\n");
  write("ga/proverbs", "Tús maith leath na hoibre.\n%\nĈi tiu teksto estas ankaŭ en la irlanda dosiero\n");
  auto data = fortunes::load_language_id(
      {.directory = root_.string(), .validation_fraction = 0, .test_fraction = 0, .languages = {"eo", "ga"}});
  std::set<std::string> eo, ga;
  auto labels = data.train.labels.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < labels.size(); ++i) (labels[i] == 0 ? eo : ga).insert(data.train.texts[i]);
  EXPECT_EQ(eo, (std::set<std::string>{"Estu sinjoro de via vorto", "Ne ĉiu nubo alportas pluvon.",
                                       "Ĉiu medalo du flankojn posedas"}));
  // The text both languages claim is dropped from both.
  EXPECT_EQ(ga, (std::set<std::string>{"Tús maith leath na hoibre."}));

  auto with_attributions = fortunes::load_language_id({.directory = root_.string(),
                                                       .validation_fraction = 0,
                                                       .test_fraction = 0,
                                                       .languages = {"eo"},
                                                       .keep_attributions = true});
  std::set<std::string> texts(with_attributions.train.texts.begin(), with_attributions.train.texts.end());
  EXPECT_TRUE(texts.count("Ne ĉiu nubo alportas pluvon. -- proverbo"));
}

TEST_F(FakeFortunes, ScriptFilterDropsTextsInAnotherScript) {
  write("bg/proverbs", "Бистра водица, мирна главица.\n%\nThis note is in English, not Bulgarian.\n");
  auto data = fortunes::load_language_id(
      {.directory = root_.string(), .validation_fraction = 0, .test_fraction = 0, .languages = {"bg"}});
  EXPECT_EQ(data.train.texts, (std::vector<std::string>{"Бистра водица, мирна главица."}));
}

TEST(Fortunes, BadOptions) {
  EXPECT_THROW(fortunes::load_language_id({.validation_fraction = 0.6, .test_fraction = 0.5}), ValueError);
  EXPECT_THROW(fortunes::load_language_id({.min_chars = 50, .max_chars = 10}), ValueError);
  EXPECT_THROW(fortunes::load_language_id({.languages = {"fr"}}), ValueError);
  EXPECT_THROW(fortunes::load_language_id({.languages = {"en", "en"}}), ValueError);
}

}  // namespace
}  // namespace kestrel::datasets
