#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "capture/capture_config.h"

using namespace numprobe::capture;

namespace {

CaptureConfig with(std::vector<std::string> list, std::vector<std::string> scope = {}) {
  CaptureConfig c;
  c.list = std::move(list);
  c.scope = std::move(scope);
  return c;
}

// One forward entry as the capture side reports it.
struct Ev {
  const char* name;
  const char* enclosing;
};

// A mix-level trace: a model with layer1 (Sequential) holding conv1 and relu, then fc.
const std::vector<Ev> kTrace = {
    {"Module.layer1.Sequential.forward.0", ""},
    {"Module.layer1.0.conv1.Conv2d.forward.0", "Module.layer1.Sequential.forward.0"},
    {"Functional.conv2d.0.forward", "Module.layer1.0.conv1.Conv2d.forward.0"},
    {"Module.layer1.1.ReLU.forward.0", "Module.layer1.Sequential.forward.0"},
    {"Functional.relu.0.forward", "Module.layer1.1.ReLU.forward.0"},
    {"Tensor.add.0.forward", "Module.layer1.Sequential.forward.0"},
    {"Torch.flatten.0.forward", ""},
    {"Module.fc.Linear.forward.0", ""},
    {"Functional.linear.0.forward", "Module.fc.Linear.forward.0"},
    {"Functional.relu.1.forward", ""},
    {"Module.fc.Linear.forward.1", ""},
    {"Functional.linear.1.forward", "Module.fc.Linear.forward.1"},
};

// Names of the trace entries the filter wants, in order.
std::vector<std::string> run(EntryFilter& f, const std::vector<Ev>& trace = kTrace) {
  std::vector<std::string> out;
  for (const Ev& e : trace) {
    if (f.wants_forward(e.name, e.enclosing)) out.emplace_back(e.name);
  }
  return out;
}

std::vector<std::string> names(std::initializer_list<const char*> n) {
  return {n.begin(), n.end()};
}

}  // namespace

TEST(EntryFilter, NoListNoScopeSelectsEverything) {
  EntryFilter f(CaptureConfig{});
  EXPECT_TRUE(f.selects_everything());
  EXPECT_EQ(run(f).size(), kTrace.size());
  EXPECT_TRUE(f.list_matches("Functional.relu.0.forward"));
  EXPECT_FALSE(EntryFilter(with({"relu"})).selects_everything());
  EXPECT_FALSE(EntryFilter(with({}, {"a", "b"})).selects_everything());
}

TEST(EntryFilter, ListByFullNameOrWithoutDirection) {
  EntryFilter f(with({"Functional.relu.0.forward"}));
  EXPECT_TRUE(f.list_matches("Functional.relu.0.forward"));
  EXPECT_TRUE(f.list_matches("Functional.relu.0.backward"));
  EXPECT_FALSE(f.list_matches("Functional.relu.1.forward"));
  EXPECT_EQ(run(f), names({"Functional.relu.0.forward"}));

  EntryFilter g(with({"Functional.relu.1"}));
  EXPECT_TRUE(g.list_matches("Functional.relu.1.forward"));
  EXPECT_TRUE(g.list_matches("Functional.relu.1.backward"));
  EXPECT_FALSE(g.list_matches("Functional.relu.10.forward"));
  EXPECT_FALSE(g.list_matches("Functional.relu.0.forward"));

  // The backward name selects the call (its forward comes first).
  EntryFilter h(with({"Functional.relu.1.backward"}));
  EXPECT_EQ(run(h), names({"Functional.relu.1.forward"}));

  // Dotted API names.
  EntryFilter a(with({"Aten.add.Tensor.3"}));
  EXPECT_TRUE(a.list_matches("Aten.add.Tensor.3.forward"));
  EXPECT_FALSE(a.list_matches("Aten.add.Tensor.4.forward"));
  EXPECT_FALSE(a.list_matches("Aten.add.Scalar.3.forward"));
}

TEST(EntryFilter, ListBySubstringOfApiType) {
  EntryFilter f(with({"relu"}));
  EXPECT_TRUE(f.list_matches("Functional.relu.0.forward"));
  EXPECT_TRUE(f.list_matches("Tensor.relu_.2.forward"));
  EXPECT_FALSE(f.list_matches("Functional.gelu.0.forward"));
  // A module's name is never matched by substring (it would expand everything inside).
  EXPECT_FALSE(f.list_matches("Module.layer1.1.ReLU.forward.0"));
  EXPECT_FALSE(f.list_matches("Module.relu.ReLU.forward.0"));
  EXPECT_EQ(run(f), names({"Functional.relu.0.forward", "Functional.relu.1.forward"}));

  EntryFilter conv(with({"conv"}));
  EXPECT_TRUE(conv.list_matches("Functional.conv2d.1.forward"));
  EXPECT_TRUE(conv.list_matches("Torch.conv_transpose1d.0.forward"));
  EntryFilter prefixed(with({"Functional.relu"}));
  EXPECT_TRUE(prefixed.list_matches("Functional.relu.3.forward"));
  EXPECT_FALSE(prefixed.list_matches("Tensor.relu.3.forward"));
  EntryFilter dotted(with({"add.Tensor"}));
  EXPECT_TRUE(dotted.list_matches("Aten.add.Tensor.3.forward"));

  // The counter and direction are not part of the type: "0"/"forward" select nothing.
  EntryFilter zero(with({"0"}));
  EXPECT_FALSE(zero.list_matches("Functional.relu.0.forward"));
  EntryFilter fwd(with({"forward"}));
  EXPECT_FALSE(fwd.list_matches("Functional.relu.0.forward"));
  EXPECT_TRUE(run(fwd).empty());
}

TEST(EntryFilter, ListByModuleExpandsItsForward) {
  // With the counter: that call only, at any depth.
  EntryFilter f(with({"Module.layer1.Sequential.forward.0"}));
  EXPECT_EQ(run(f),
            names({"Module.layer1.Sequential.forward.0", "Module.layer1.0.conv1.Conv2d.forward.0",
                   "Functional.conv2d.0.forward", "Module.layer1.1.ReLU.forward.0",
                   "Functional.relu.0.forward", "Tensor.add.0.forward"}));
  // Without the counter: every call of the module.
  EntryFilter g(with({"Module.fc.Linear"}));
  EXPECT_EQ(run(g), names({"Module.fc.Linear.forward.0", "Functional.linear.0.forward",
                           "Module.fc.Linear.forward.1", "Functional.linear.1.forward"}));
  EntryFilter h(with({"Module.fc.Linear.forward.1"}));
  EXPECT_EQ(run(h), names({"Module.fc.Linear.forward.1", "Functional.linear.1.forward"}));
  // A module item does not select a different module sharing its name as a prefix.
  EntryFilter p(with({"Module.fc.Linear.forward.1"}));
  EXPECT_FALSE(p.wants_forward("Module.fc.Linear.forward.10", ""));
  EXPECT_FALSE(p.wants_forward("Functional.linear.9.forward", "Module.fc.Linear.forward.10"));
  EntryFilter q(with({"Module.layer1"}));
  EXPECT_TRUE(run(q).empty());
}

TEST(EntryFilter, ListModuleFallbackWhenModuleEntryNotReported) {
  // The caller reports only APIs: the innermost enclosing module is matched by name.
  EntryFilter f(with({"Module.layer1.0.conv1.Conv2d"}));
  EXPECT_TRUE(
      f.wants_forward("Functional.conv2d.0.forward", "Module.layer1.0.conv1.Conv2d.forward.0"));
  EXPECT_FALSE(f.wants_forward("Functional.relu.0.forward", "Module.layer1.1.ReLU.forward.0"));
  EXPECT_TRUE(
      f.wants_forward("Functional.conv2d.1.forward", "Module.layer1.0.conv1.Conv2d.forward.0"));
}

TEST(EntryFilter, ListMixesItems) {
  EntryFilter f(with({"linear", "Functional.relu.0", "Module.layer1.0.conv1.Conv2d.forward.0"}));
  EXPECT_EQ(run(f), names({"Module.layer1.0.conv1.Conv2d.forward.0", "Functional.conv2d.0.forward",
                           "Functional.relu.0.forward", "Functional.linear.0.forward",
                           "Functional.linear.1.forward"}));
}

TEST(EntryFilter, ListMatchesParameterGrads) {
  EntryFilter f(with({"Module.fc.Linear.forward.0"}));
  EXPECT_TRUE(f.list_matches("Module.fc.Linear.parameters_grad"));
  EXPECT_TRUE(f.list_matches("Module.fc.Linear.parameters_grad.1"));
  EXPECT_FALSE(f.list_matches("Module.fc2.Linear.parameters_grad.0"));
  EntryFilter g(with({"Module.fc.Linear"}));
  EXPECT_TRUE(g.list_matches("Module.fc.Linear.parameters_grad.0"));
  EntryFilter h(with({"Module.fc.Linear.parameters_grad"}));
  EXPECT_TRUE(h.list_matches("Module.fc.Linear.parameters_grad.3"));
  EXPECT_FALSE(h.list_matches("Module.fc.Linear.forward.0"));
  EntryFilter s(with({"Linear"}));  // no substring rule for modules
  EXPECT_FALSE(s.list_matches("Module.fc.Linear.parameters_grad.0"));
}

TEST(EntryFilter, ListOnUnparsedNamesIsSubstring) {
  EntryFilter f(with({"loss"}));
  EXPECT_TRUE(f.list_matches("my_loss.0"));
  EXPECT_FALSE(f.list_matches("activations.0"));
}

TEST(EntryFilter, ApiScopeIsInclusive) {
  EntryFilter f(with({}, {"Functional.conv2d.0.forward", "Tensor.add.0"}));
  EXPECT_EQ(run(f), names({"Functional.conv2d.0.forward", "Module.layer1.1.ReLU.forward.0",
                           "Functional.relu.0.forward", "Tensor.add.0.forward"}));
  // Closed for good until reset().
  EXPECT_FALSE(f.wants_forward("Functional.conv2d.0.forward", ""));
  f.reset();
  EXPECT_EQ(run(f).size(), 4u);
}

TEST(EntryFilter, ScopeOfOneEntry) {
  EntryFilter f(with({}, {"Functional.relu.1.forward", "Functional.relu.1.forward"}));
  EXPECT_EQ(run(f), names({"Functional.relu.1.forward"}));
}

TEST(EntryFilter, ScopeEndNeverSeenRunsToStepEnd) {
  EntryFilter f(with({}, {"Functional.linear.0.forward", "Functional.nope.0.forward"}));
  EXPECT_EQ(run(f), names({"Functional.linear.0.forward", "Functional.relu.1.forward",
                           "Module.fc.Linear.forward.1", "Functional.linear.1.forward"}));
  EntryFilter g(with({"relu"}, {"Functional.nope.0", "Functional.relu.1"}));
  EXPECT_TRUE(run(g).empty());
}

TEST(EntryFilter, ModuleScopeIncludesEndModuleContents) {
  EntryFilter f(
      with({}, {"Module.layer1.0.conv1.Conv2d.forward.0", "Module.layer1.1.ReLU.forward.0"}));
  EXPECT_EQ(run(f), names({"Module.layer1.0.conv1.Conv2d.forward.0", "Functional.conv2d.0.forward",
                           "Module.layer1.1.ReLU.forward.0", "Functional.relu.0.forward"}));
  // A module endpoint without its counter means its first call once the scope is open; nested
  // modules inside the end module stay in scope.
  EntryFilter g(with({}, {"Torch.flatten.0.forward", "Module.layer1.Sequential"}));
  EXPECT_EQ(run(g).size(), 6u);
  EntryFilter h(with({}, {"Module.layer1.Sequential", "Module.layer1.Sequential.forward.0"}));
  EXPECT_EQ(run(h).size(), 6u);  // the Sequential and everything nested in it, at any depth
}

TEST(EntryFilter, ScopeStartModuleRunsUntilEnd) {
  EntryFilter f(with({}, {"Module.layer1.Sequential.forward.0", "Torch.flatten.0.forward"}));
  EXPECT_EQ(run(f).size(), 7u);
  EntryFilter g(with({}, {"Module.fc.Linear.forward.0", "Module.fc.Linear.backward.1"}));
  EXPECT_EQ(run(g), names({"Module.fc.Linear.forward.0", "Functional.linear.0.forward",
                           "Functional.relu.1.forward", "Module.fc.Linear.forward.1",
                           "Functional.linear.1.forward"}));
}

TEST(EntryFilter, ScopeAndListMustBothPass) {
  EntryFilter f(with({"relu", "linear"}, {"Functional.conv2d.0.forward", "Functional.linear.0"}));
  EXPECT_EQ(run(f), names({"Functional.relu.0.forward", "Functional.linear.0.forward"}));
  // The list's module nesting is tracked even while out of scope.
  EntryFilter g(with({"Module.layer1.Sequential.forward.0"},
                     {"Functional.conv2d.0.forward", "Torch.flatten.0.forward"}));
  EXPECT_EQ(run(g), names({"Functional.conv2d.0.forward", "Module.layer1.1.ReLU.forward.0",
                           "Functional.relu.0.forward", "Tensor.add.0.forward"}));
}

TEST(EntryFilter, ResetForgetsNesting) {
  EntryFilter f(with({"Module.layer1.Sequential.forward.0"}));
  EXPECT_EQ(run(f).size(), 6u);
  f.reset();
  // After reset the Sequential was not seen; its child is matched by name only.
  EXPECT_FALSE(f.wants_forward("Functional.relu.0.forward", "Module.layer1.1.ReLU.forward.0"));
  EXPECT_EQ(run(f).size(), 6u);
}

TEST(EntryFilter, TensorListIsSubstringOfFullName) {
  CaptureConfig c;
  c.tensor_list = {"conv2d", "Module.fc"};
  EntryFilter f(c);
  EXPECT_TRUE(f.selects_everything());
  EXPECT_TRUE(f.tensor_list_matches("Functional.conv2d.0.forward"));
  EXPECT_TRUE(f.tensor_list_matches("Module.fc.Linear.forward.0"));
  EXPECT_FALSE(f.tensor_list_matches("Functional.relu.0.forward"));
  EXPECT_FALSE(EntryFilter(CaptureConfig{}).tensor_list_matches("Functional.relu.0.forward"));
}

TEST(EntryFilter, DataModeFromConfig) {
  CaptureConfig c = parse_capture_config(R"({"statistics": {"data_mode": ["backward", "input"]}})",
                                         "config.json");
  EntryFilter f(c);
  EXPECT_FALSE(f.data_mode().forward);
  EXPECT_TRUE(f.data_mode().backward);
  EXPECT_TRUE(f.data_mode().input);
  EXPECT_FALSE(f.data_mode().output);
}

TEST(EntryFilter, ConfigFromJsonDrivesFilter) {
  CaptureConfig c = parse_capture_config(
      R"({"task": "tensor", "level": "mix", "tensor": {"list": ["Module.fc.Linear.forward.0"],
          "scope": []}})",
      "config.json");
  EntryFilter f(c);
  EXPECT_EQ(run(f), names({"Module.fc.Linear.forward.0", "Functional.linear.0.forward"}));
}
