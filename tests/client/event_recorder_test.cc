// The event recorder against the fake clientset and clock: a repeat within ten minutes
// raises the count of the event already posted; later, or different, it is a new event.
#include "client/event_recorder.h"

#include <gtest/gtest.h>

#include "client/testing/fake_client.h"
#include "client/testing/fake_clock.h"
#include "proto/api/apps.pb.h"

namespace mkube::client {
namespace {

std::vector<api::Event> Events(testing::FakeClient& fake) {
  apiserver::ListRequest req;
  req.set_resource("events");
  auto reply = fake.List(req);
  EXPECT_TRUE(reply.ok()) << reply.status();
  std::vector<api::Event> out;
  for (const auto& bytes : reply->items()) out.emplace_back().ParseFromString(bytes);
  return out;
}

TEST(EventRecorder, RepeatsWithinTenMinutesRaiseTheCount) {
  testing::FakeClock clock;
  testing::FakeClient fake(&clock);
  EventRecorder events(&fake, "kubelet", "node01", 1000, &clock);
  api::Pod pod;
  pod.mutable_metadata()->set_name("web");
  pod.mutable_metadata()->set_namespace_("default");
  pod.mutable_metadata()->set_uid("u1");

  events.Record(pod, "Warning", "BackOff", "Back-off restarting failed container");
  events.Flush();
  clock.Advance(absl::Minutes(9));
  events.Record(pod, "Warning", "BackOff", "Back-off restarting failed container");
  events.Flush();
  auto got = Events(fake);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].count(), 2);
  EXPECT_EQ(got[0].involved_object().name(), "web");
  EXPECT_EQ(got[0].source().component(), "kubelet");
  EXPECT_NE(got[0].first_timestamp(), got[0].last_timestamp());

  events.Record(pod, "Normal", "Pulled", "Container image already present");
  clock.Advance(absl::Minutes(11));
  events.Record(pod, "Warning", "BackOff", "Back-off restarting failed container");
  events.Flush();
  got = Events(fake);
  EXPECT_EQ(got.size(), 3u) << "another reason, and a repeat after the window, are new events";
}

TEST(EventRecorder, AFailedPostIsDroppedNotRetriedForever) {
  testing::FakeClient fake;
  EventRecorder events(&fake, "kubelet", "node01");
  api::Pod pod;
  pod.mutable_metadata()->set_name("web");
  fake.FailNext("create", "events", absl::UnavailableError("down"));
  events.Record(pod, "Normal", "Scheduled", "one");
  events.Record(pod, "Normal", "Scheduled", "two");
  events.Flush();
  auto got = Events(fake);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].message(), "two");
}

TEST(EventRecorder, ABoundedQueueDropsTheOldest) {
  testing::FakeClient fake;
  // The first post waits until the test lets it go, so everything after it queues.
  absl::Mutex mu;
  bool go = false;
  fake.PrependReactor("create", "events", [&](const testing::Action&) -> std::optional<absl::Status> {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&go));
    return std::nullopt;
  });
  EventRecorder events(&fake, "kubelet", "node01", 3);
  api::Pod pod;
  pod.mutable_metadata()->set_name("web");
  events.Record(pod, "Normal", "R", "first");
  ASSERT_TRUE(fake.WaitForActions("create", 1));
  for (int i = 0; i < 5; ++i) events.Record(pod, "Normal", "R", "queued " + std::to_string(i));
  EXPECT_EQ(events.dropped(), 2u);
  {
    absl::MutexLock lock(&mu);
    go = true;
  }
  events.Flush();
  std::vector<std::string> messages;
  for (const auto& e : Events(fake)) messages.push_back(e.message());
  std::sort(messages.begin(), messages.end());
  EXPECT_EQ(messages, (std::vector<std::string>{"first", "queued 2", "queued 3", "queued 4"}));
}

TEST(EventRecorder, TenDifferentMessagesAboutOneObjectAreFoldedIntoOneEvent) {
  testing::FakeClock clock;
  testing::FakeClient fake(&clock);
  EventRecorder events(&fake, "replicaset-controller", "", 1000, &clock);
  api::ReplicaSet rs;
  rs.mutable_metadata()->set_name("web-7d4b9");
  rs.mutable_metadata()->set_namespace_("default");
  rs.mutable_metadata()->set_uid("u1");
  for (int i = 0; i < 15; ++i) {
    events.Record(rs, "Normal", "SuccessfulCreate", "Created pod: web-7d4b9-" + std::to_string(i));
  }
  events.Flush();
  auto got = Events(fake);
  ASSERT_EQ(got.size(), 10u) << "nine on their own, then one for the rest";
  int folded = 0;
  for (const auto& e : got) {
    if (e.message().rfind("(combined from similar events): ", 0) != 0) continue;
    ++folded;
    EXPECT_EQ(e.count(), 6);
    EXPECT_EQ(e.message(), "(combined from similar events): Created pod: web-7d4b9-14");
  }
  EXPECT_EQ(folded, 1);

  // Ten minutes later the messages count from zero again.
  clock.Advance(absl::Minutes(11));
  events.Record(rs, "Normal", "SuccessfulCreate", "Created pod: web-7d4b9-99");
  events.Flush();
  got = Events(fake);
  ASSERT_EQ(got.size(), 11u);
}

TEST(EventRecorder, ASourceMayPost25EventsAboutAnObjectThenOneEveryFiveMinutes) {
  testing::FakeClock clock;
  testing::FakeClient fake(&clock);
  EventRecorder events(&fake, "kubelet", "node01", 1000, &clock);
  api::Pod pod, other;
  pod.mutable_metadata()->set_name("web");
  pod.mutable_metadata()->set_uid("u1");
  other.mutable_metadata()->set_name("db");
  other.mutable_metadata()->set_uid("u2");
  // Each reason differs, so nothing is folded: only the filter holds them back.
  for (int i = 0; i < 30; ++i) events.Record(pod, "Normal", "R" + std::to_string(i), "m");
  events.Record(other, "Normal", "Started", "another object has a budget of its own");
  events.Flush();
  EXPECT_EQ(Events(fake).size(), 26u);
  EXPECT_EQ(events.filtered(), 5u);

  clock.Advance(absl::Minutes(5));
  events.Record(pod, "Normal", "Late1", "m");
  events.Record(pod, "Normal", "Late2", "m");
  events.Flush();
  EXPECT_EQ(Events(fake).size(), 27u) << "one token back after five minutes";
  EXPECT_EQ(events.filtered(), 6u);
}

TEST(LruMap, KeepsTheMostRecentlyUsed) {
  LruMap<int> m(2);
  m["a"] = 1;
  m["b"] = 2;
  ASSERT_NE(m.Find("a"), nullptr);  // "a" is now the most recent
  m["c"] = 3;                       // so "b" goes
  EXPECT_EQ(m.Find("b"), nullptr);
  EXPECT_EQ(*m.Find("a"), 1);
  EXPECT_EQ(*m.Find("c"), 3);
  m.Erase("a");
  EXPECT_EQ(m.size(), 1u);
}

}  // namespace
}  // namespace mkube::client
