// Names people use for cgroups: the path parser on the real path shapes of
// systemd, Docker, containerd, CRI-O and the kubelet (both drivers, every QoS
// class, cgroup v1 and v2; tests/fixtures/cgroup/path_shapes.tsv), the host
// lookups on a fixture state directory (tests/fixtures/cgroup/hoststate), and
// the contract: cgroup.name / cgroup.kind for every cgroup label in the evidence.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/catalog.hpp"
#include "collectors/cgroup/cgroup_names.hpp"
#include "collectors/cgroup/cgroup_path_shape.hpp"
#include "collectors/cgroup/container_state.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/cgroup_labels.hpp"
#include "engine/rules/rules.hpp"

using namespace iodiag;
using namespace iodiag::cgroup;
namespace fs = std::filesystem;

namespace {

const std::string kHost = std::string(IODIAG_FIXTURES) + "/cgroup/hoststate";

// Container ids of the fixture: sha256 of a word.
const std::string kDockerWeb = "f31f384749f9115acf01fcf82f5a966b59dcc0a4cbd7c9740888c0bf32aa2bbb";
const std::string kContainerdNginx = "b1f831f4898d30f51f80074bddc740b0da277c0217aa5521f6ef86283c16ac33";
const std::string kContainerdSandbox = "85b013213e803c7bc39ff8937f98c8b3b8ba3ee2cf22b5c7f08dfa7dd07f0fc4";
const std::string kCrioApp = "610713dca419d7deb83a1246d0c1ee0ac2e23b81cbb29bba37147e88e1848cda";
const std::string kNerdctlDb = "b3609a4addd18ad909597aa9711bf1630d31a269631d574c18a4cecade83738f";
const std::string kDockershimApi = "dbb5d2eeef262034ff0ad911d22ca8faf516e6cc22d0f173d6d85120835c011e";
const std::string kNoState = "8e1a8202caf06f1dd3f6a5007ca3bd1774acd25cedd81f83c1f8aafef9be7d5c";

struct ShapeCase {
    std::string what, label, kind, name, host_kind, host_name;
};

std::vector<ShapeCase> shape_cases() {
    const std::string path = std::string(IODIAG_FIXTURES) + "/cgroup/path_shapes.tsv";
    std::vector<ShapeCase> out;
    std::istringstream in(read_text_file(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f;
        std::istringstream cols(line);
        for (std::string c; std::getline(cols, c, '\t');) f.push_back(c);
        EXPECT_EQ(f.size(), 6u) << path << ": " << line;
        if (f.size() == 6) out.push_back({f[0], f[1], f[2], f[3], f[4], f[5]});
    }
    return out;
}

// A copy of a tree the test may change, removed afterwards.
class TempTree {
public:
    explicit TempTree(const std::string& name) {
        dir_ = fs::temp_directory_path() / ("iodiag-cgnames-" + std::to_string(::getpid()) + "-" + name);
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    ~TempTree() { fs::remove_all(dir_); }
    std::string root() const { return dir_.string(); }
    void write(const std::string& abs, const std::string& text) const {
        const fs::path p = dir_ / abs.substr(1);
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }

private:
    fs::path dir_;
};

}  // namespace

TEST(CgroupPathShape, RealShapesGetTheirKindAndNameFromThePathAlone) {
    const auto cases = shape_cases();
    ASSERT_GE(cases.size(), 30u);
    for (const auto& c : cases) {
        const Naming n = name_cgroup(c.label, "");
        EXPECT_EQ(n.kind, c.kind) << c.what << ": " << c.label;
        EXPECT_EQ(n.name, c.name) << c.what << ": " << c.label;
        // Nothing but the path was read.
        EXPECT_EQ(n.provenance.kind, "derived") << c.what;
    }
}

TEST(CgroupPathShape, HostStateAddsContainerPodAndUserNames) {
    for (const auto& c : shape_cases()) {
        const Naming n = name_cgroup(c.label, kHost);
        EXPECT_EQ(n.kind, c.host_kind) << c.what << ": " << c.label;
        EXPECT_EQ(n.name, c.host_name) << c.what << ": " << c.label;
        // A name the host gave says which file gave it.
        if (n.name != c.name) {
            EXPECT_EQ(n.provenance.kind, "file") << c.what << ": " << n.provenance.source;
        }
    }
}

TEST(CgroupPathShape, KubernetesPodUidQosAndContainerIdInBothDrivers) {
    const std::string uid = "3f0b1c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
    const std::string uid_ = "3f0b1c2d_4e5f_4a6b_8c7d_9e0f1a2b3c4d";
    struct Case {
        std::string path, qos, runtime;
    };
    const std::vector<Case> cases = {
        {"/kubepods/burstable/pod" + uid + "/" + kContainerdNginx, "burstable", ""},
        {"/kubepods/besteffort/pod" + uid + "/" + kContainerdNginx, "besteffort", ""},
        {"/kubepods/pod" + uid + "/" + kContainerdNginx, "guaranteed", ""},
        {"/kubepods/burstable/pod" + uid + "/crio-" + kContainerdNginx, "burstable", "cri-o"},
        {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid_ + ".slice/cri-containerd-" +
             kContainerdNginx + ".scope",
         "burstable", "containerd"},
        {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uid_ + ".slice/crio-" +
             kContainerdNginx + ".scope",
         "besteffort", "cri-o"},
        {"/kubepods.slice/kubepods-pod" + uid_ + ".slice/docker-" + kContainerdNginx + ".scope", "guaranteed", "docker"},
    };
    for (const auto& c : cases) {
        const PathShape s = parse_path_shape(c.path);
        EXPECT_EQ(s.kind, kind::kPodContainer) << c.path;
        EXPECT_EQ(s.pod_uid, uid) << c.path;
        EXPECT_EQ(s.qos, c.qos) << c.path;
        EXPECT_EQ(s.container_id, kContainerdNginx) << c.path;
        EXPECT_EQ(s.runtime, c.runtime) << c.path;
        EXPECT_EQ(s.below, "") << c.path;
    }
    // Not under kubepods: a directory called pod<uid> is just a directory.
    EXPECT_EQ(parse_path_shape("/batch/pod" + uid).kind, kind::kPlain);
    // A uid of the wrong shape is not a pod.
    EXPECT_EQ(parse_path_shape("/kubepods/burstable/pod1234").kind, kind::kPlain);
}

TEST(CgroupPathShape, TellingPathPrefersBlkioThenMemoryThenCpu) {
    EXPECT_EQ(telling_path("/a/b"), "/a/b");
    EXPECT_EQ(telling_path("memory:/m,blkio:/b"), "/b");
    EXPECT_EQ(telling_path("blkio:/b,memory:/m"), "/b");
    EXPECT_EQ(telling_path("io:/i,memory:/m"), "/i");
    EXPECT_EQ(telling_path("cpu,cpuacct:/c,memory:/m"), "/m");
    EXPECT_EQ(telling_path("cpu,cpuacct:/c,pids:/p"), "/c");
    EXPECT_EQ(telling_path("pids:/p"), "/p");
    EXPECT_EQ(telling_path("cgroup-id:12"), "cgroup-id:12");
}

TEST(ContainerState, DockerNameAndItsKubernetesLabels) {
    const auto web = find_container_state(kHost, kDockerWeb, "");
    ASSERT_TRUE(web);
    EXPECT_EQ(web->runtime, "docker");
    EXPECT_EQ(web->name, "web");   // "/web" in Docker's file
    EXPECT_EQ(web->pod_name, "");
    EXPECT_NE(web->source.find("/var/lib/docker/containers/" + kDockerWeb + "/config.v2.json"), std::string::npos);
    const auto api = find_container_state(kHost, kDockershimApi, "docker");
    ASSERT_TRUE(api);
    EXPECT_EQ(api->name, "api");
    EXPECT_EQ(api->pod_name, "api-5c9f7");
    EXPECT_EQ(api->pod_namespace, "payments");
    EXPECT_FALSE(api->sandbox);
}

TEST(ContainerState, ContainerdCriAnnotationsAndSandbox) {
    const auto nginx = find_container_state(kHost, kContainerdNginx, "containerd");
    ASSERT_TRUE(nginx);
    EXPECT_EQ(nginx->runtime, "containerd");
    EXPECT_EQ(nginx->name, "nginx");
    EXPECT_EQ(nginx->pod_name, "web-7d4b9c-x2x7q");
    EXPECT_EQ(nginx->pod_namespace, "shop");
    EXPECT_FALSE(nginx->sandbox);
    const auto pause = find_container_state(kHost, kContainerdSandbox, "");
    ASSERT_TRUE(pause);
    EXPECT_TRUE(pause->sandbox);
    const auto db = find_container_state(kHost, kNerdctlDb, "");
    ASSERT_TRUE(db);
    EXPECT_EQ(db->name, "db");
    EXPECT_NE(db->source.find("io.containerd.runtime.v2.task/default/"), std::string::npos);
}

TEST(ContainerState, CrioAnnotations) {
    const auto app = find_container_state(kHost, kCrioApp, "cri-o");
    ASSERT_TRUE(app);
    EXPECT_EQ(app->runtime, "cri-o");
    EXPECT_EQ(app->name, "app");
    EXPECT_EQ(app->pod_name, "batch-6f8d4-kq2zt");
    EXPECT_EQ(app->pod_namespace, "jobs");
}

TEST(ContainerState, UnknownOrMalformedIdsAndBrokenStateNameNothing) {
    EXPECT_FALSE(find_container_state(kHost, kNoState, ""));
    EXPECT_FALSE(find_container_state(kHost, "../../etc", ""));   // never a path: 64 hex digits only
    EXPECT_FALSE(find_container_state(kHost, kDockerWeb.substr(0, 12), ""));
    TempTree t("broken");
    t.write("/var/lib/docker/containers/" + kDockerWeb + "/config.v2.json", "{\"Name\": \"/half");
    t.write("/run/containerd/io.containerd.runtime.v2.task/k8s.io/" + kContainerdNginx + "/config.json", "[1, 2]");
    t.write("/run/containers/storage/overlay-containers/" + kCrioApp + "/userdata/config.json", "{\"ociVersion\": \"1.0.2\"}");
    EXPECT_FALSE(find_container_state(t.root(), kDockerWeb, ""));
    EXPECT_FALSE(find_container_state(t.root(), kContainerdNginx, ""));
    const auto crio = find_container_state(t.root(), kCrioApp, "");
    ASSERT_TRUE(crio);   // JSON, but no annotations: the runtime is known, the name is not
    EXPECT_EQ(crio->name, "");
    EXPECT_EQ(name_cgroup("/system.slice/crio-" + kCrioApp + ".scope", t.root()).name,
              "cri-o container " + kCrioApp.substr(0, 12));
}

TEST(ContainerState, DockerDataRootFromDaemonJson) {
    TempTree t("dataroot");
    t.write("/etc/docker/daemon.json", "{\"data-root\": \"/srv/docker\", \"log-driver\": \"journald\"}");
    t.write("/srv/docker/containers/" + kDockerWeb + "/config.v2.json", "{\"ID\": \"x\", \"Name\": \"/cache\"}");
    const auto c = find_container_state(t.root(), kDockerWeb, "docker");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name, "cache");
    EXPECT_NE(c->source.find("/srv/docker/containers/"), std::string::npos);
}

TEST(PodState, KubeletPodDirectoryGivesHostnameNamespaceAndContainers) {
    const auto web = find_pod_state(kHost, "3f0b1c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d");
    ASSERT_TRUE(web);
    EXPECT_EQ(web->name, "web-7d4b9c-x2x7q");
    EXPECT_EQ(web->pod_namespace, "shop");   // the service-account volume's namespace file
    EXPECT_EQ(web->containers, std::vector<std::string>{"nginx"});
    const auto pg = find_pod_state(kHost, "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d");
    ASSERT_TRUE(pg);
    EXPECT_EQ(pg->name, "pg-0");             // the short name, not a HostAliases entry
    EXPECT_EQ(pg->pod_namespace, "db");      // from pg-0.pg.db.svc.cluster.local
    EXPECT_EQ(pg->containers, (std::vector<std::string>{"metrics", "postgres"}));
    const auto host_net = find_pod_state(kHost, "11111111-2222-4333-8444-555555555555");
    ASSERT_TRUE(host_net);
    EXPECT_EQ(host_net->name, "");           // the host's hosts file names the node, not the pod
    EXPECT_FALSE(find_pod_state(kHost, "aaaabbbb-cccc-4ddd-8eee-ffff00001111"));
    EXPECT_FALSE(find_pod_state(kHost, "../../../etc"));
}

TEST(PodState, UserNameFromPasswd) {
    EXPECT_EQ(find_user_name(kHost, "1000"), "alice");
    EXPECT_EQ(find_user_name(kHost, "0"), "root");
    EXPECT_EQ(find_user_name(kHost, "100"), "");
    EXPECT_EQ(find_user_name(kHost, "1"), "daemon");
}

TEST(CgroupNamesContract, EveryCgroupLabelInTheEvidenceGetsANameAndAKind) {
    Evidence ev;
    const Provenance p{"test", "test"};
    const std::string v1 = "memory:/system.slice/postgresql@15-main.service,blkio:/system.slice/postgresql@15-main.service";
    const std::string docker = "/system.slice/docker-" + kDockerWeb + ".scope";
    const std::string pod = "/kubepods/burstable/pod3f0b1c2d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/" + kContainerdNginx;
    ev.add_metric("syscall.cgroup.time_us", {{"cgroup", v1}}, 1, "us", p);
    ev.add_fact("cgroup.io_weight", {{"cgroup", "/fio-test"}}, "100", p);
    HistogramMetric h;
    h.name = "some.hist_us";
    h.labels = {{"cgroup", "/batch"}};
    ev.histograms.push_back(h);
    Exemplar e;
    e.kind = "syscall";
    e.labels = {{"comm", "nginx"}, {"cgroup", pod}};
    ev.exemplars.push_back(e);
    ValueSeries s;
    s.name = "some.series";
    s.labels = {{"cgroup", "/series-only"}};
    ev.series.values.push_back(s);
    ev.add_fact("attr.slow.top_cgroup", {}, docker, p);   // a fact whose value is a cgroup label
    ev.add_fact("device.lower_limit_cgroup", {{"device", "dm-0"}}, "/limited", p);
    ev.add_fact("cgroup.hierarchy", {{"cgroup", "/fio-test"}}, "v1", p);   // about a cgroup, not naming one

    add_cgroup_names(ev, kHost);
    const std::map<std::string, std::pair<std::string, std::string>> want = {
        {v1, {"postgresql@15-main.service", "systemd-unit"}},
        {"/fio-test", {"fio-test", "plain"}},
        {"/batch", {"batch", "plain"}},
        {pod, {"burstable pod shop/web-7d4b9c-x2x7q container nginx", "k8s-container"}},
        {"/series-only", {"series-only", "plain"}},
        {docker, {"docker container web " + kDockerWeb.substr(0, 12), "docker-container"}},
        {"/limited", {"limited", "plain"}},
    };
    for (const auto& [label, nk] : want) {
        const auto n = find_cgroup_name(ev, label);
        ASSERT_TRUE(n) << label;
        EXPECT_EQ(n->name, nk.first) << label;
        EXPECT_EQ(n->kind, nk.second) << label;
    }
    EXPECT_EQ(cgroup_labels(ev).size(), want.size());
    EXPECT_FALSE(find_cgroup_name(ev, "v1"));
    // Named once: a second pass (a bundle named again) adds nothing.
    const size_t facts = ev.facts.size();
    add_cgroup_names(ev, kHost);
    EXPECT_EQ(ev.facts.size(), facts);
    // Name first, the path as evidence.
    EXPECT_EQ(cgroup_shown(ev, docker), "docker container web " + kDockerWeb.substr(0, 12) + " (" + docker + ")");
}

TEST(CgroupNamesContract, AnOldBundleWithoutNamesShowsThePath) {
    Evidence ev;
    ev.add_fact("attr.slow.top_cgroup", {}, "memory:/process_api/c75c2ae1", {"test", "test"});
    EXPECT_FALSE(find_cgroup_name(ev, "memory:/process_api/c75c2ae1"));
    EXPECT_EQ(cgroup_shown(ev, "memory:/process_api/c75c2ae1"), "memory:/process_api/c75c2ae1");
    EXPECT_EQ(name_with_path("", "/a"), "/a");
    EXPECT_EQ(name_with_path("/a", "/a"), "/a");
}

TEST(CgroupNamesContract, FactsThatNameACgroupByConvention) {
    EXPECT_TRUE(fact_names_a_cgroup("attr.slow.top_cgroup"));
    EXPECT_TRUE(fact_names_a_cgroup("device.lower_limit_cgroup"));
    EXPECT_TRUE(fact_names_a_cgroup("attr.who.cgroup"));
    EXPECT_FALSE(fact_names_a_cgroup("cgroup.hierarchy"));
    EXPECT_FALSE(fact_names_a_cgroup("cgroup.name"));
    EXPECT_FALSE(fact_names_a_cgroup("cgroup"));
    EXPECT_FALSE(fact_names_a_cgroup("attr.slow.top_comm"));
}

TEST(CgroupNamesContract, TheCatalogKnowsTheFactsPerCgroup) {
    const MetricCatalog cat = full_catalog();
    for (const char* name : {"cgroup.name", "cgroup.kind"}) {
        const MetricSpec* s = cat.find(name);
        ASSERT_TRUE(s) << name;
        EXPECT_EQ(s->kind, MetricSpec::Kind::Fact);
        EXPECT_EQ(s->instance_key, "cgroup");
    }
}

TEST(CgroupNamesContract, RulesCiteTheNamesAndShowCgroupsByName) {
    const MetricCatalog cat = full_catalog();
    LoadContext ctx;
    ctx.catalog = &cat;
    const RuleSet rs = load_rules_from_string(R"(
rules:
  - id: test.named
    layer: cgroup
    severity: warning
    for_each: cgroup
    title: "{cgroup} is a {cgroup.kind}{? called {cgroup.name}?}"
    when: {metric: cgroup.io_read_iops, op: ">", value: 0}
    mechanism: "top cgroup {attr.slow.top_cgroup}"
    evidence: [cgroup.name, attr.slow.top_cgroup]
    fixes: []
)",
                                              "test.yaml", ctx);
    ASSERT_TRUE(rs.ok()) << rs.to_json().dump();
    const std::string docker = "/system.slice/docker-" + kDockerWeb + ".scope";
    const std::string web = "docker container web " + kDockerWeb.substr(0, 12);
    Evidence ev;
    ev.add_metric("cgroup.io_read_iops", {{"cgroup", docker}}, 50, "1/s", {"file", "test"});
    ev.add_fact("attr.slow.top_cgroup", {}, "memory:" + docker, {"tracepoint", "test"});
    add_cgroup_names(ev, kHost);
    const RuleResult* r = nullptr;
    const auto results = evaluate_rules(rs, ev);
    for (const auto& x : results)
        if (x.instance == docker) r = &x;
    ASSERT_TRUE(r);
    EXPECT_EQ(r->title, web + " (" + docker + ") is a docker-container called " + web);
    EXPECT_EQ(r->mechanism, "top cgroup " + web + " (memory:" + docker + ")");
    // The cited fact keeps its value; what a finding shows is the name with it.
    for (const auto& c : r->cited)
        if (c.name == "attr.slow.top_cgroup") {
            EXPECT_EQ(c.text, "memory:" + docker);
            EXPECT_EQ(c.formatted, web + " (memory:" + docker + ")");
        }
    // Without a name the path alone, and the clause with the name drops.
    Evidence old;
    old.add_metric("cgroup.io_read_iops", {{"cgroup", docker}}, 50, "1/s", {"file", "test"});
    old.add_fact("cgroup.kind", {{"cgroup", docker}}, "plain", {"derived", "test"});
    EXPECT_EQ(evaluate_rules(rs, old)[0].title, docker + " is a plain");
}
