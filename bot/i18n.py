"""Simplified Chinese for command and option descriptions, served to Discord through a Translator.

Discord shows each user the description in their client language when the synced command carries a
`description_localizations` entry for it; command and option *names* stay English so that the same
`/fit gpu:… model:…` works everywhere (and in the docs).
"""

from __future__ import annotations

import discord
from discord import app_commands


def interaction_locale(interaction: discord.Interaction) -> str:
    """The asker's Discord language, as the templates and charts are keyed."""
    return str(interaction.locale.value if interaction.locale else "en-US")

ZH_CN: dict[str, str] = {
    "Does a model run on a GPU? VRAM, speed, max context": "模型能否在显卡上运行？显存、速度、最大上下文",
    "GPU, e.g. T4, RTX 4090, A100 40GB, M2 Max 64GB": "显卡，例如 T4、RTX 4090、A100 40GB、M2 Max 64GB",
    "Model, e.g. qwen3-8b, Qwen/Qwen3-8B, llama3.1:8b-instruct-q4_K_M":
        "模型，例如 qwen3-8b、Qwen/Qwen3-8B、llama3.1:8b-instruct-q4_K_M",
    "Format (Q4_K_M, Q8_0, AWQ…) or level (int4, int8, fp16); default compares three":
        "量化格式（Q4_K_M、Q8_0、AWQ…）或精度（int4、int8、fp16）；默认比较三种",
    "Context length: 8k, 32k, 128K, 1M": "上下文长度：8k、32k、128K、1M",
    "Inference engine": "推理引擎",
    "KV cache precision": "KV 缓存精度",
    "Number of GPUs (1-8)": "显卡数量（1–8）",
    "Prompt length for time to first token (default 2048)": "用于计算首字延迟的提示长度（默认 2048）",
    "Concurrent sequences (default 1)": "并发序列数（默认 1）",
    "Best models that run on a GPU, with speed and memory": "显卡上可运行的最佳模型，含速度与显存",
    "GPU, e.g. A30, RTX 4090": "显卡，例如 A30、RTX 4090",
    "Context length: 8k, 32k, 128K": "上下文长度：8k、32k、128K",
    "Order: quality, speed or size": "排序：质量、速度或参数量",
    "quality": "质量",
    "speed": "速度",
    "size": "参数量",
    "Number of GPUs": "显卡数量",
    "Only this format or level (e.g. int4, Q8_0)": "只看此量化格式或精度（如 int4、Q8_0）",
    "Spec card: VRAM, bandwidth, largest models, fine-tuning": "显卡规格卡：显存、带宽、可运行的最大模型、微调能力",
    "GPU, e.g. T4, RTX 4090, M2 Max 64GB": "显卡，例如 T4、RTX 4090、M2 Max 64GB",
    "Context for the capability (default 8k)": "评估能力所用的上下文（默认 8k）",
    "Two GPUs for one model, or two models on one GPU": "同一模型比较两块显卡，或同一显卡比较两个模型",
    "First GPU": "第一块显卡",
    "First model": "第一个模型",
    "Second GPU (compare GPUs)": "第二块显卡（比较显卡）",
    "Second model (compare models)": "第二个模型（比较模型）",
    "Context length": "上下文长度",
    "Memory for QLoRA, LoRA or full fine-tuning": "QLoRA、LoRA 或全参数微调所需显存",
    "GPU": "显卡",
    "Model": "模型",
    "qlora, lora or full": "qlora、lora 或 full（全参数）",
    "Sequence length (default 2048)": "序列长度（默认 2048）",
    "Micro-batch (default 1)": "微批次（默认 1）",
    "Browse the models in the catalog": "浏览模型目录",
    "Family, e.g. Qwen3, Llama, Gemma": "系列，例如 Qwen3、Llama、Gemma",
    "At most this many billion parameters": "参数量上限（十亿）",
    "Browse the GPUs in the catalog": "浏览显卡目录",
    "Vendor": "厂商",
    "How to read rigcheck's numbers: assumptions, engines, errors": "如何理解 rigcheck 的数字：假设、引擎、误差",
    "Default GPU, engine and context": "默认显卡、引擎与上下文",
    "Defaults for everyone in this server (Manage Server)": "本服务器所有人的默认值（需要“管理服务器”权限）",
    "Default GPU": "默认显卡",
    "Default engine": "默认引擎",
    "Default context, e.g. 32k": "默认上下文，例如 32k",
    "Your own defaults (override the server's)": "你自己的默认值（优先于服务器设置）",
    "Default KV cache precision": "默认 KV 缓存精度",
    "One format for both sides (default: the best that fits both)":
        "两边使用的同一量化格式（默认：两者都放得下的最高精度）",
    "Clear your defaults, or this server's (Manage Server)": "清除你的默认值，或本服务器的（需要“管理服务器”权限）",
    "Whose defaults: yours (me) or this server's": "清除谁的默认值：你的（me）或本服务器的（server）",
    "Which GPU setups run a model at a context, and how fast": "哪些显卡配置能运行该模型，速度如何",
    "Model, or hf:org/name for any Hugging Face model": "模型，或 hf:组织/名称 表示任意 Hugging Face 模型",
    "Format or level (default int4)": "量化格式或精度（默认 int4）",
    "At least this many tokens/s": "至少达到的 tokens/s",
    "Most you would spend, USD (launch prices)": "预算上限，美元（按发布价格）",
    "A daily summary of the best models for your GPUs": "每日摘要：适合你的显卡的最佳模型",
    "Post the daily summary to a channel or channel webhook": "将每日摘要发布到频道或频道 Webhook",
    "Channel to post in": "发布到的频道",
    "GPUs to cover, comma-separated (up to 4), e.g. 't4, a30'": "要覆盖的显卡，逗号分隔（最多 4 块），例如 't4, a30'",
    "Context length to rank at, e.g. 32k": "排名所用的上下文长度，例如 32k",
    "A channel webhook URL to post through instead of the bot": "改用此频道 Webhook URL 发布，而不是机器人本身",
    "Stop the daily summary (in one channel, or everywhere)": "停止每日摘要（某个频道或全部）",
    "Only this channel's subscription; leave empty for all of this server's":
        "只取消此频道的订阅；留空则取消本服务器全部订阅",
    "See today's summary for this server (only you see it)": "预览本服务器今天的摘要（仅你可见）",
    "Community speed reports: what GPUs really do": "社区测速报告：显卡的真实速度",
    "Report the speed you measured; you confirm before it is stored": "报告你实测的速度；确认后才会保存",
    "GPU you ran on, e.g. T4, RTX 4090": "你运行所用的显卡，例如 T4、RTX 4090",
    "Model, e.g. qwen3-8b": "模型，例如 qwen3-8b",
    "Format you ran, e.g. Q4_K_M, Q8_0, AWQ": "你运行的量化格式，例如 Q4_K_M、Q8_0、AWQ",
    "Inference engine (Ollama and LM Studio run llama.cpp)": "推理引擎（Ollama 与 LM Studio 使用 llama.cpp）",
    "Generation speed, tokens/s (e.g. 35.2); or give paste": "生成速度，tokens/s（例如 35.2）；或使用 paste",
    "Prompt processing speed, tokens/s": "提示处理速度，tokens/s",
    "Context length you ran with, e.g. 8k": "运行时的上下文长度，例如 8k",
    "Engine version or build, e.g. b4446": "引擎版本或构建号，例如 b4446",
    "Anything else worth knowing (200 characters)": "其他值得说明的信息（200 字符以内）",
    "llama-bench table or `ollama run --verbose` timings": "llama-bench 表格或 `ollama run --verbose` 的计时",
    "Your reports; pick one to delete it (only you see this)": "你的报告；选择一条即可删除（仅你可见）",
    "Hide a report made in this server (Manage Server)": "隐藏本服务器提交的一条报告（需要“管理服务器”权限）",
    "Report number, as /report shows it": "报告编号，如 /report 所示",
    "Turn community reports off or on here (Manage Server)": "在本服务器关闭或开启社区测速（需要“管理服务器”权限）",
    "True: no reports from here and none shown here; False: back on":
        "True：不接受也不显示本服务器的报告；False：重新开启",
    "Bot owners: list held reports, accept, hide or remove one": "机器人所有者：列出待审核报告，通过、隐藏或删除",
    "held (list), accept, hide or remove": "held（列出）、accept、hide 或 remove",
    "Report number": "报告编号",
}

LOCALES = {discord.Locale.chinese: ZH_CN}


class RigTranslator(app_commands.Translator):
    async def translate(
        self, string: app_commands.locale_str, locale: discord.Locale, context: app_commands.TranslationContextTypes
    ) -> str | None:
        if context.location in (
            app_commands.TranslationContextLocation.command_name,
            app_commands.TranslationContextLocation.group_name,
            app_commands.TranslationContextLocation.parameter_name,
        ):
            return None  # names stay English: '/fit gpu:… model:…' is the same command for everyone
        table = LOCALES.get(locale)
        return table.get(string.message) if table else None
