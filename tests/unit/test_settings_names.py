"""The settings name what they choose (`cnm_backend`, `chat_backend`, the `model_*` fields), and every place that
took the old names (`llm`, `chat`, `llm_model`, `llm_base_url`, `llm_timeout`) still takes them: a saved
settings.json, a library's choices.json, the operator's server.toml and environment, the command line."""

from __future__ import annotations

import json

import pytest

from core.cli.flags import build_parser, settings_from_flags
from core.infra.errors import ConfigError
from core.server_config import ServerConfig, load_server_config
from core.settings import RENAMED, Settings, load_settings, load_settings_checked, save_settings, session_settings

OLD_FILE = {"llm": "openai", "llm_model": "gpt-x", "llm_base_url": "http://models.internal/v1", "llm_timeout": 12.5,
            "top_k": 7}


def test_an_old_settings_file_loads_under_the_new_names(tmp_path):
    (tmp_path / "settings.json").write_text(json.dumps(OLD_FILE))
    loaded = load_settings_checked(tmp_path)
    assert loaded.problem is None
    s = loaded.settings
    assert (s.cnm_backend, s.chat_backend, s.model_name, s.model_server_url, s.model_timeout, s.top_k) == \
        ("openai", "openai", "gpt-x", "http://models.internal/v1", 12.5, 7)


def test_the_chat_backend_still_follows_an_old_files_cnm_backend_only_when_it_is_a_chat_model(tmp_path):
    for saved, chat in [({"llm": "llamacpp"}, "llamacpp"), ({"llm": "extract"}, "local"),
                        ({"llm": "openai", "chat": "local"}, "local"), ({"cnm_backend": "local"}, "local"),
                        ({"cnm_backend": "rule", "chat_backend": "openai"}, "openai")]:
        (tmp_path / "settings.json").write_text(json.dumps(saved))
        assert load_settings(tmp_path).chat_backend == chat, saved


def test_saving_writes_only_the_new_names(tmp_path):
    (tmp_path / "settings.json").write_text(json.dumps(OLD_FILE))
    save_settings(load_settings(tmp_path), tmp_path)
    written = json.loads((tmp_path / "settings.json").read_text())
    assert not set(RENAMED) & set(written)
    assert {written[new] for new in RENAMED.values()} >= {"openai", "gpt-x", "http://models.internal/v1", 12.5}


def test_a_bad_value_under_an_old_name_is_dropped_by_its_new_name_and_the_rest_kept(tmp_path):
    (tmp_path / "settings.json").write_text(json.dumps({**OLD_FILE, "llm": "gpt"}))
    loaded = load_settings_checked(tmp_path)
    assert loaded.problem is not None and "cnm_backend" in loaded.problem and "\n" not in loaded.problem
    assert (loaded.settings.cnm_backend, loaded.settings.model_name, loaded.settings.top_k) == ("extract", "gpt-x", 7)


def test_a_new_name_wins_over_its_old_one_in_a_saved_file():
    assert Settings.model_validate({"llm": "rule", "cnm_backend": "local"}).cnm_backend == "local"


def test_a_librarys_old_choices_still_load():
    chosen = session_settings("shared", ServerConfig(workspace="ws"), None, {"llm": "rule", "chat": "llamacpp"})
    assert (chosen.cnm_backend, chosen.chat_backend) == ("rule", "llamacpp")


def test_the_operators_old_names_still_load(tmp_path):
    path = tmp_path / "server.toml"
    path.write_text('llm_base_url = "http://models.internal/v1"\nllm_model = "qwen"\nllm_timeout = 30\n')
    config = load_server_config(path, {})
    assert (config.model_server_url, config.model_name, config.model_timeout) == \
        ("http://models.internal/v1", "qwen", 30.0)
    old_env = {"CHUNKLENS_LLM_BASE_URL": "http://old.internal/v1", "CHUNKLENS_LLM_MODEL": "old"}
    assert (load_server_config(path, old_env).model_server_url, load_server_config(path, old_env).model_name) == \
        ("http://old.internal/v1", "old")
    new_env = {**old_env, "CHUNKLENS_MODEL_SERVER_URL": "http://new.internal/v1", "CHUNKLENS_MODEL_NAME": "new"}
    assert (load_server_config(path, new_env).model_server_url, load_server_config(path, new_env).model_name) == \
        ("http://new.internal/v1", "new")


def test_one_setting_under_both_its_names_in_server_toml_is_one_line(tmp_path):
    path = tmp_path / "server.toml"
    path.write_text('llm_model = "a"\nmodel_name = "b"\n')
    with pytest.raises(ConfigError) as caught:
        load_server_config(path, {})
    message = str(caught.value)
    assert "llm_model and model_name name the same setting" in message and "\n" not in message


def _bench(*flags: str):
    return build_parser().parse_args(["bench", "--data", "x", "--chunkers", "chop", *flags])


def test_the_old_flags_are_aliases_of_the_new_ones():
    old = settings_from_flags(_bench("--llm", "openai", "--chat", "llamacpp", "--llm-model", "m",
                                     "--llm-base-url", "http://s/v1", "--llm-timeout", "9"))
    new = settings_from_flags(_bench("--cnm-backend", "openai", "--chat-backend", "llamacpp", "--model-name", "m",
                                     "--model-server-url", "http://s/v1", "--model-timeout", "9"))
    assert old == new
    assert (new.cnm_backend, new.chat_backend, new.model_name, new.model_server_url, new.model_timeout) == \
        ("openai", "llamacpp", "m", "http://s/v1", 9.0)
    assert settings_from_flags(_bench("--llm", "local")).chat_backend == "local"
    questions = build_parser().parse_args(["questions", "--data", "x", "--n", "1", "--out", "o"])
    assert (settings_from_flags(questions).cnm_backend, settings_from_flags(questions).chat_backend) == \
        ("llamacpp", "llamacpp")


def test_help_names_the_new_flags_first(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for new, old in [("--cnm-backend", "--llm"), ("--chat-backend", "--chat"), ("--model-name", "--llm-model"),
                     ("--model-server-url", "--llm-base-url"), ("--model-timeout", "--llm-timeout")]:
        assert f"{new} " in text and text.index(new) < text.index(f"{old} ", text.index(new)), new

