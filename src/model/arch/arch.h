// Registration hooks of the built-in architectures, one per arch/<name>.cc.
#pragma once

namespace pagoda {

class ArchRegistry;

void RegisterLlama(ArchRegistry& registry);
void RegisterQwen2(ArchRegistry& registry);
void RegisterQwen3(ArchRegistry& registry);
void RegisterQwen2Moe(ArchRegistry& registry);
void RegisterQwen3Moe(ArchRegistry& registry);
void RegisterDeepseek2(ArchRegistry& registry);
void RegisterGlm4Moe(ArchRegistry& registry);
void RegisterBert(ArchRegistry& registry);

}  // namespace pagoda
