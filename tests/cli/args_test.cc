#include "cli/args.h"

#include <gtest/gtest.h>

#include "CLI/CLI.hpp"

namespace mkube::cli {
namespace {

struct TaintCase {
  std::string spec;
  std::string key, value, effect;
  bool remove;
  std::string error;  // empty: valid
};

TEST(ParseTaintTest, TheSeedsFormsAndTheMalformed) {
  const std::vector<TaintCase> cases = {
      {"cht=mycht:NoExecute", "cht", "mycht", "NoExecute", false, ""},
      {"key1:NoSchedule-", "key1", "", "NoSchedule", true, ""},
      {"cht=mycht:NoExecute-", "cht", "mycht", "NoExecute", true, ""},
      {"check-", "check", "", "", true, ""},
      {"node-role.kubernetes.io/master:PreferNoSchedule", "node-role.kubernetes.io/master", "",
       "PreferNoSchedule", false, ""},
      {"cht=mycht", "", "", "", false, "invalid taint spec: cht=mycht"},
      {"cht=mycht:", "", "", "", false, "invalid taint spec: cht=mycht:"},
      {"=x:NoSchedule", "", "", "", false, "invalid taint spec: =x:NoSchedule"},
      {"cht=x:Sometimes", "", "", "", false,
       "invalid taint spec: cht=x:Sometimes, unsupported taint effect \"Sometimes\""},
      {"role=kubernetes.io/master:PreferNoSchedule", "", "", "", false,
       "invalid taint spec: role=kubernetes.io/master:PreferNoSchedule, "},
      {"bad key!:NoSchedule", "", "", "", false, "invalid taint spec: bad key!:NoSchedule, "},
  };
  for (const auto& c : cases) {
    auto t = ParseTaint(c.spec);
    if (c.error.empty()) {
      ASSERT_TRUE(t.ok()) << c.spec << ": " << t.status();
      EXPECT_EQ(t->key, c.key) << c.spec;
      EXPECT_EQ(t->value, c.value) << c.spec;
      EXPECT_EQ(t->effect, c.effect) << c.spec;
      EXPECT_EQ(t->remove, c.remove) << c.spec;
    } else {
      ASSERT_FALSE(t.ok()) << c.spec;
      EXPECT_EQ(std::string(t.status().message()).substr(0, c.error.size()), c.error) << t.status();
    }
  }
}

TEST(ParseDurationTest, KubectlForms) {
  EXPECT_EQ(*ParseDuration("0", "--timeout"), std::chrono::seconds(0));
  EXPECT_EQ(*ParseDuration("", "--timeout"), std::chrono::seconds(0));
  EXPECT_EQ(*ParseDuration("45", "--timeout"), std::chrono::seconds(45));
  EXPECT_EQ(*ParseDuration("30s", "--timeout"), std::chrono::seconds(30));
  EXPECT_EQ(*ParseDuration("2m", "--timeout"), std::chrono::seconds(120));
  EXPECT_EQ(*ParseDuration("1h", "--timeout"), std::chrono::seconds(3600));
  for (const char* bad : {"soon", "5d", "-3s", "1.5h"}) {
    auto d = ParseDuration(bad, "--timeout");
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().message(), std::string("invalid argument \"") + bad +
                                        "\" for \"--timeout\" flag: time: invalid duration \"" +
                                        bad + "\"");
  }
}


// A line as mkubectl's run, create job and exec take it: positional words, options that take
// one or several values, a flag, and the command after "--".
struct Line {
  std::string name;
  std::vector<std::string> words, labels, env;
  std::string image;
  bool command = false;
};

void ParseRun(const std::vector<std::string>& words, Line* line) {
  CLI::App app{"test"};
  app.require_subcommand(1);
  app.fallthrough();
  std::string ns;
  app.add_option("-n,--namespace", ns, "namespace");
  auto* run = app.add_subcommand("run", "run");
  run->add_option("name", line->name, "NAME");
  run->add_option("args", line->words, "after --");
  run->add_option("--image", line->image, "image");
  run->add_option("-l,--labels", line->labels, "labels");
  run->add_option("--env", line->env, "env");
  run->add_flag("--command", line->command, "command");
  app.add_subcommand("get", "get")->add_option("--output", ns, "output");
  std::vector<const char*> argv{"mkubectl"};
  for (const auto& w : words) argv.push_back(w.c_str());
  ParseCommandLine(app, static_cast<int>(argv.size()), argv.data());
}

TEST(ParseCommandLineTest, WordsAfterTheDashAreTheCommandWhateverComesBefore) {
  const std::vector<std::string> command = {"sh", "-c", "echo hi"};
  struct Case {
    std::string name;
    std::vector<std::string> before;  // then "--", then `command`
    std::vector<std::string> labels, env;
  };
  const std::vector<Case> cases = {
      {"an option with its value attached, last", {"run", "bb", "--image=busybox", "--labels=app=x"},
       {"app=x"}, {}},
      {"a short option with its value apart, last",
       {"run", "bb", "--image", "busybox", "-l", "app=x"}, {"app=x"}, {}},
      {"an environment variable last", {"run", "bb", "--env", "X=1", "--image=busybox"}, {}, {"X=1"}},
      {"both, then a single-valued option", {"run", "bb", "--env=X=1", "-l", "a=b", "--image=busybox"},
       {"a=b"}, {"X=1"}},
      {"a global flag last", {"run", "bb", "--image=busybox", "-l", "a=b", "-n", "ns"}, {"a=b"}, {}},
  };
  for (const auto& c : cases) {
    std::vector<std::string> words = c.before;
    words.push_back("--");
    words.insert(words.end(), command.begin(), command.end());
    Line line;
    ASSERT_NO_THROW(ParseRun(words, &line)) << c.name;
    EXPECT_EQ(line.name, "bb") << c.name;
    EXPECT_EQ(line.image, "busybox") << c.name;
    EXPECT_EQ(line.words, command) << c.name;
    EXPECT_EQ(line.labels, c.labels) << c.name;
    EXPECT_EQ(line.env, c.env) << c.name;
  }
}

TEST(ParseCommandLineTest, WordsBeforeTheDashComeFirstAndDashesAfterItAreWords) {
  Line line;
  ParseRun({"run", "s", "sleep", "--image=busybox", "--command", "--", "9", "--", "-l"}, &line);
  EXPECT_EQ(line.name, "s");
  EXPECT_TRUE(line.command);
  EXPECT_EQ(line.words, (std::vector<std::string>{"sleep", "9", "--", "-l"}));
  EXPECT_TRUE(line.labels.empty());

  Line nothing;
  ParseRun({"run", "s", "--image=busybox", "-l", "a=b", "--"}, &nothing);
  EXPECT_TRUE(nothing.words.empty());
  EXPECT_EQ(nothing.labels, std::vector<std::string>{"a=b"});
}

TEST(ParseCommandLineTest, ACommandThatTakesNoWordsRefusesThem) {
  Line line;
  try {
    ParseRun({"get", "--output=json", "--", "pods", "-x"}, &line);
    FAIL() << "words after -- were taken by a command without positional words";
  } catch (const CLI::ExtrasError& e) {
    EXPECT_STREQ(e.what(), "The following arguments were not expected: pods -x");
  }
}

}  // namespace
}  // namespace mkube::cli
